import { invalid } from '../errors.js';

const ACTION = /^[a-z0-9-]+\.(read|write)$/;

/**
 * Permission names are `<extensionKey>.<resource>.<read|write>`: an extension
 * can only declare permissions in its own namespace. Throws 400 naming the first
 * offender (`permissions.<index>`).
 */
export function checkPermissions(extensionKey: string, names: readonly string[]): string[] {
  const prefix = `${extensionKey}.`;
  names.forEach((name, index) => {
    if (!name.startsWith(prefix) || !ACTION.test(name.slice(prefix.length))) {
      throw invalid(
        `permissions.${index}`,
        `permission "${name}" must have the form ${extensionKey}.<resource>.read or ${extensionKey}.<resource>.write ` +
          '(resource: lowercase letters, digits, hyphens)',
      );
    }
  });
  return [...names];
}
