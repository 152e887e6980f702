import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';

/**
 * Resolves once the answer has left: Node's response closed, whether it was sent to its end or
 * the caller hung up first. A request served without Node's server (a translation run outside its
 * own answer) has no such moment: `undefined` then, and the caller decides when its answer is out.
 */
export function answerOut(c: Context): Promise<void> | undefined {
  const outgoing = (c.env as Partial<HttpBindings> | undefined)?.outgoing;
  if (!outgoing) return undefined;
  if (outgoing.destroyed) return Promise.resolve();
  return new Promise<void>((resolve) => outgoing.once('close', () => resolve()));
}
