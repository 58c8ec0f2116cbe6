import type { Agent } from 'node:http';

export function postJson(url: string, agent: Agent, body: string, headers?: Record<string, string>): Promise<void>;
