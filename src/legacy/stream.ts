import type { Context } from 'hono';
import { answerOut, cutAnswer } from '../http/answer-out.js';
import { requestLog } from '../http/request-log.js';
import type { AppEnv } from '../services.js';
import { mismatch, runMapped } from './translate.js';

const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;

/**
 * Runs a list operation and answers its JSON array while the successor's pages arrive, never
 * holding the whole list: the first two pages are read before the answer starts, so their
 * failures are answered as errors like any other, and a list of one page is answered whole
 * without a stream (a web stream costs a tenth of such a list's CPU); a later failure cuts the
 * answer off (the client sees an incomplete body, never a short list that looks whole) and is
 * logged once. A caller that hangs up is no failure: one info line, and no page is read after the
 * one under way. The bytes are the same as `c.json(list)`'s. The request's log line waits for the
 * end of the stream (`streaming`).
 */
export async function streamedList(
  c: Context<AppEnv>,
  operationId: string,
  fields: readonly string[],
): Promise<Response> {
  const result = await runMapped(c, operationId, { fields, stream: true });
  if (result.type === 'collection') return c.json(result.value, 200);
  if (result.type !== 'collection-pages') throw mismatch(operationId, result, 'collection');
  const pages = result.pages;
  if (c.req.method === 'HEAD') {
    // Nothing reads the body of a HEAD answer: the pages are closed here, not left to a stream.
    await pages.return();
    return c.body(null, 200, { 'Content-Type': 'application/json' });
  }
  // A list of one page (up to `successor.pageSize` entries) is answered whole, without a stream:
  // the second `next` ends without a call when the first page said it was the only one (a Hydra
  // total, a plain array shorter than a page). Pages come as the JSON text of their arrays.
  const first = await pages.next();
  if (first.done) return c.json([], 200);
  const second = await pages.next();
  if (second.done) return c.body(first.value, 200, { 'Content-Type': 'application/json' });
  const ahead = [first.value, second.value];
  let opened = false;
  // The answer is over when its stream ends, fails or is cancelled, or when the connection is
  // gone (a caller that hung up, perhaps before the server ever read the stream): the request's
  // log line waits for this. The pages are left to the stream: a copy of the answer (a
  // recording) may still be reading them, and must get the whole list or a failure, never a
  // short list that looks whole.
  let ended: () => void = () => {};
  c.set(
    'streaming',
    new Promise<void>((resolve) => {
      ended = resolve;
    }),
  );
  void answerOut(c)?.then(ended);
  // The stream's reader went away (cancel: the caller hung up, or every copy of the answer stopped
  // reading): a page that arrives after it is not wanted. A page failed: the answer is cut off.
  let gone = false;
  let failed = false;
  // Bytes, as a web stream must carry (a copy of the answer, a recording or shadow mode reads it too).
  const encoder = new TextEncoder();
  // highWaterMark 0: a page is rendered only when the writer asks for the next chunk, not one
  // ahead of it. A chunk rendered ahead waits while the one before is written, long enough to be
  // promoted to V8's old generation, which then keeps its bytes (external memory) until a full
  // collection: over a long list that cost tens of MiB.
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          // Every pull delivers something: the stream asks for more only after one that did, so a
          // page that renders no members is skipped here rather than stalling the answer.
          for (;;) {
            let page = ahead.shift();
            if (page === undefined) {
              const next = await pages.next();
              if (gone) return;
              if (next.done) {
                controller.enqueue(encoder.encode(opened ? ']' : '[]'));
                controller.close();
                ended();
                return;
              }
              // Each page's text is encoded as it is: its `[` becomes the list's opening bracket or
              // the comma after the page before, and its `]` is left out. (Cutting and joining the
              // string first would make V8 copy the whole page once more.)
              page = next.value;
            }
            if (page === '[]') continue;
            const bytes = encoder.encode(page);
            bytes[0] = opened ? COMMA : OPEN_BRACKET;
            controller.enqueue(bytes.subarray(0, -1));
            opened = true;
            return;
          }
        } catch (error) {
          if (gone) return;
          failed = true;
          c.set('answerCutOff', 'failed');
          requestLog(c).error(
            { err: error, operation: operationId },
            'list answer cut off: a later page failed',
          );
          // On Node's server the connection is cut first: the adapter, its reader cancelled, then
          // never sees the failure (it would print it on stderr), and a copy of the answer still does.
          await cutAnswer(c);
          controller.error(error);
          ended();
        }
      },
      async cancel() {
        gone = true;
        // A failed page was logged where it failed. Cut off by the shutdown (server.shutdownTimeoutMs
        // passed), the client got an incomplete list it did not ask to end: a warning, not its leaving.
        if (!failed && c.get('services').inFlight.cutOff) {
          c.set('answerCutOff', 'shutdown');
          requestLog(c).warn(
            { operation: operationId },
            'list answer cut off by the shutdown: server.shutdownTimeoutMs passed before its last page; the client got an incomplete list',
          );
        } else if (!failed)
          requestLog(c).info(
            { operation: operationId },
            'list answer not finished: the client went away; no further pages are read',
          );
        ended();
        await pages.return();
      },
    },
    { highWaterMark: 0 },
  );
  return c.body(body, 200, { 'Content-Type': 'application/json' });
}
