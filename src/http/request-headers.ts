import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';

/**
 * One request header by its lower-case name, repeated fields joined with ", " as fetch's `Headers`
 * joins them. On the Node server it is looked up in the request's raw header list, which spares
 * each request the fetch `Headers` object the adapter would otherwise build (and validate) from
 * all of its headers; without the Node server (an app called directly) the Request answers.
 */
export function requestHeader(c: Context, name: string): string | undefined {
  const raw = (c.env as Partial<HttpBindings> | undefined)?.incoming?.rawHeaders;
  if (!raw) return c.req.header(name);
  let value: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const key = raw[i] as string;
    if (key.length !== name.length || key.toLowerCase() !== name) continue;
    const field = raw[i + 1] as string;
    value = value === undefined ? field : `${value}, ${field}`;
  }
  return value;
}

/** Whether a request announces a body: a Content-Length other than 0, or a Transfer-Encoding (RFC 9112 6.3). */
export function announcesBody(c: Context): boolean {
  const length = requestHeader(c, 'content-length');
  return requestHeader(c, 'transfer-encoding') !== undefined || (length !== undefined && length !== '0');
}
