/** The console's addresses of the things pages link to, each path segment encoded. */
export const extensionLink = (key: string) => `/marketplace/${encodeURIComponent(key)}`;
export const versionLink = (key: string, version: string) => `${extensionLink(key)}/versions/${encodeURIComponent(version)}`;
export const eventTypeLink = (eventKey: string) => `/event-types/${encodeURIComponent(eventKey)}`;
export const configLink = (key: string) => `/extensions/${encodeURIComponent(key)}/config`;
