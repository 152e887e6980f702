import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';

/**
 * One request header by its lower-case name, repeated fields joined with ", " as fetch's `Headers`
 * joins them. On the Node server it comes from the request's `headersDistinct` (made once per
 * request from the raw header list), which spares each request the fetch `Headers` object the
 * adapter would otherwise build (and validate) from all of its headers; without the Node server
 * (an app called directly) the Request answers.
 */
export function requestHeader(c: Context, name: string): string | undefined {
  const distinct = (c.env as Partial<HttpBindings> | undefined)?.incoming?.headersDistinct;
  if (!distinct) return c.req.header(name);
  return distinct[name]?.join(', ');
}

/** Whether a request announces a body: a Content-Length other than 0, or a Transfer-Encoding (RFC 9112 6.3). */
export function announcesBody(c: Context): boolean {
  const length = requestHeader(c, 'content-length');
  return requestHeader(c, 'transfer-encoding') !== undefined || (length !== undefined && length !== '0');
}

/**
 * Whether the request's body was read to its end. On the Node server that is the request stream's
 * own end: a body read in part (a chunked one refused by the body limit after its first bytes) is
 * not, though its fetch Request says `bodyUsed`. Without the Node server, whether it was used.
 */
export function bodyReadToEnd(c: Context): boolean {
  const incoming = (c.env as Partial<HttpBindings> | undefined)?.incoming;
  return incoming ? incoming.readableEnded : c.req.raw.bodyUsed;
}

/**
 * Whether the client's connection is closed already (the client gave up before its answer was
 * handed over): the answer goes nowhere, though a write it reports went through. False without the
 * Node server.
 */
export function clientGone(c: Context): boolean {
  return (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket?.destroyed === true;
}
