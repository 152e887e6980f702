import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';

/** Node's response of a request served by the Node server; undefined for an app called directly. */
function nodeResponse(c: Context): HttpBindings['outgoing'] | undefined {
  return (c.env as Partial<HttpBindings> | undefined)?.outgoing;
}

/**
 * Resolves once the answer has left: Node's response closed, whether it was sent to its end or
 * the caller hung up first. A request served without Node's server (a translation run outside its
 * own answer) has no such moment: `undefined` then, and the caller decides when its answer is out.
 */
export function answerOut(c: Context): Promise<void> | undefined {
  const outgoing = nodeResponse(c);
  if (!outgoing) return undefined;
  if (outgoing.destroyed) return Promise.resolve();
  return new Promise<void>((resolve) => outgoing.once('close', () => resolve()));
}

/**
 * Cuts the answer off on the connection: destroys Node's response, so the caller gets a body
 * without its end, and resolves once it has closed. By then the Node adapter has stopped reading
 * the answer's stream, so a failure the stream reports afterwards reaches only the answer's copies
 * (a recording), not the adapter, which would print it on stderr. `undefined` without Node's
 * server (see `answerOut`): the caller fails the stream instead.
 */
export function cutAnswer(c: Context): Promise<void> | undefined {
  const outgoing = nodeResponse(c);
  if (!outgoing) return undefined;
  const closed = answerOut(c);
  outgoing.destroy();
  return closed;
}

/**
 * Sets a header of the answer, whichever response the handlers make. On the Node server it goes
 * on Node's response (`setHeader`), which merges it into the headers of the answer when that is
 * written — a header the answer sets itself wins —, so the answer keeps its plain header record:
 * hono builds no fetch `Headers` for it and the adapter copies none back. Without the Node server
 * (an app called directly) hono's context sets it.
 */
export function setAnswerHeader(c: Context, name: string, value: string): void {
  const outgoing = nodeResponse(c);
  if (outgoing && !outgoing.headersSent) outgoing.setHeader(name, value);
  else c.header(name, value);
}
