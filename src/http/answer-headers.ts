import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';

/**
 * Sets a header of the answer, whichever response the handlers make. On the Node server it goes
 * on Node's response (`setHeader`), which merges it into the headers of the answer when that is
 * written — a header the answer sets itself wins —, so the answer keeps its plain header record:
 * hono builds no fetch `Headers` for it and the adapter copies none back. Without the Node server
 * (an app called directly) hono's context sets it.
 */
export function setAnswerHeader(c: Context, name: string, value: string): void {
  const outgoing = (c.env as Partial<HttpBindings> | undefined)?.outgoing;
  if (outgoing && !outgoing.headersSent) outgoing.setHeader(name, value);
  else c.header(name, value);
}
