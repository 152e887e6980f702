// Raw HTTP/1.1 on a socket, for what fetch and node:http would not send (or would tidy up).
import { connect } from 'node:net';

/**
 * Sends raw bytes to host:port and reads until the server closes the connection. `halfClose:
 * false`: the client's side stays open after the request, as most clients keep it (Node's server
 * drops a half-closed connection whose answer is not written yet).
 */
export function rawExchange(
  url: string,
  request: string,
  options: { halfClose?: boolean } = {},
): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () =>
      options.halfClose === false ? socket.write(request) : socket.end(request),
    );
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      answer += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
  });
}

/** Status line, headers (lower-case names) and body of a raw HTTP/1.1 answer. */
export function parseRaw(answer: string): { statusLine: string; headers: Map<string, string>; body: string } {
  const [head = '', body = ''] = answer.split('\r\n\r\n', 2);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = new Map(
    lines.map((line) => [
      line.slice(0, line.indexOf(':')).toLowerCase(),
      line.slice(line.indexOf(':') + 1).trim(),
    ]),
  );
  return { statusLine, headers, body };
}
