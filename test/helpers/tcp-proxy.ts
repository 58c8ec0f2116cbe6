import { connect, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** The database goes away: every connection through the proxy is dropped, and new ones are refused until restore(). */
  cut(): void;
  restore(): void;
  /**
   * The next time a client sends bytes containing `text` (a statement's text,
   * or a prepared statement's name), that one connection is lost: `before`
   * it reaches the server (the statement never runs), or `after` the server
   * answered it (the statement ran and, outside a transaction, committed;
   * the answer never arrives). PostgreSQL's wire protocol only. Skips the
   * first `skip` sends. Resolves once the connection was cut.
   */
  cutAt(text: string, moment: 'before' | 'after', skip?: number): Promise<void>;
  close(): Promise<void>;
}

/** PostgreSQL's ReadyForQuery message ('Z', length 5), less its status byte. */
const READY_FOR_QUERY = Buffer.from([0x5a, 0, 0, 0, 5]);

interface Trap {
  text: string;
  moment: 'before' | 'after';
  skip: number;
  sprung: () => void;
}

/**
 * A TCP proxy on 127.0.0.1 in front of `targetPort`: a test points a daemon at it
 * and cuts it to make the database unreachable, as a network fault or a database
 * restart would, without stopping the test cluster other tests share.
 */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let cut = false;
  let trap: Trap | null = null;
  const server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    /** Set once this connection sent the trapped text with moment `after`: the next answer is lost with it. */
    let loseNextAnswer: (() => void) | null = null;
    /** The end of what the client sent before, so that a text split between two chunks is found. */
    let sentTail = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      const armed = trap;
      const seen = Buffer.concat([sentTail, chunk]);
      // Only a text that ends in this chunk: one wholly in the tail was sent before.
      const from = Math.max(0, sentTail.length - Buffer.byteLength(armed?.text ?? '') + 1);
      sentTail = seen.subarray(Math.max(0, seen.length - 256));
      if (armed && seen.indexOf(armed.text, from) !== -1) {
        sentTail = Buffer.alloc(0);
        if (armed.skip > 0) armed.skip -= 1;
        else {
          trap = null;
          if (armed.moment === 'before') {
            client.destroy();
            upstream.destroy();
            armed.sprung();
            return;
          }
          loseNextAnswer = armed.sprung;
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!loseNextAnswer) {
        client.write(chunk);
        return;
      }
      // The answer is complete (and the statement committed) once the server is ready for the next query.
      if (!chunk.includes(READY_FOR_QUERY)) return;
      const sprung = loseNextAnswer;
      loseNextAnswer = null;
      client.destroy();
      upstream.destroy();
      sprung();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    cut() {
      cut = true;
      for (const socket of open) socket.destroy();
    },
    restore() {
      cut = false;
    },
    cutAt(text, moment, skip = 0) {
      return new Promise<void>((sprung) => (trap = { text, moment, skip, sprung }));
    },
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
