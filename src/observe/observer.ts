/** One finished request, as the pipeline saw it. */
export interface RequestEvent {
  /** The legacy operation id, or a fixed name (`unknown`, `docs.page`, `metrics`…): never the raw path. */
  operation: string;
  status: number;
  /** The authenticated API user; `""` when the request was refused before one was known. */
  apiUser: string;
  durationMs: number;
  /** When the request finished (milliseconds since the epoch, from the injected clock). */
  at: number;
}

/** One HTTP call to the successor (API or OAuth2 server), retries counted one by one. */
export interface SuccessorCallEvent {
  kind: 'api' | 'token';
  method: string;
  /** The successor path with its IDs replaced by `{id}` (bounded: never a raw ID). */
  route: string;
  /** HTTP status, or 0 when no answer came (timeout, network error). */
  status: number;
  durationMs: number;
}

/** Why an API-user authentication was refused. */
export type AuthFailureReason = 'missing' | 'unknown_user' | 'wrong_password' | 'address' | 'throttled';

/**
 * What the proxy tells about its work, injected wherever work happens (no module-global
 * counters): metrics and the usage inventory are observers.
 * Every method must be cheap and must not throw.
 */
export interface Observer {
  request?(event: RequestEvent): void;
  successorCall?(event: SuccessorCallEvent): void;
  /** A new access token was fetched from the successor's token endpoint. */
  tokenRenewal?(): void;
  authFailure?(reason: AuthFailureReason): void;
  /** A password key derivation ran (a credential was not served from the cache). */
  kdfRun?(): void;
  /** How many credential checks wait for a turn at the KDF now (told whenever it changes). */
  kdfWaiting?(count: number): void;
  /** A failed login started or lengthened a block of a throttle counter (`user`, `pair` or `address`). */
  loginBlock?(scope: 'user' | 'pair' | 'address'): void;
  /** A legacy ID resolution was served from the cache (`hit`) or needed the successor (`miss`). */
  idCacheLookup?(result: 'hit' | 'miss'): void;
  /** A legacy operation was served in a migration mode (translate, passthrough, shadow). */
  modeRequest?(operation: string, mode: string): void;
  /** A call to the old server answered `status` (0: no answer). */
  legacyUpstreamCall?(status: number): void;
  /** The outcome of one shadow comparison: match, mismatch, error or skipped. */
  shadowComparison?(operation: string, outcome: ShadowOutcomeKind): void;
  /** A new connection was closed unanswered: `server.maxConnections` connections were open. */
  connectionDropped?(): void;
  /** A recording line was dropped: the recording's queue was full (a slow or stalled disk). */
  recordingDropped?(): void;
  /**
   * A streamed answer (a large list) begun with 200 was cut off before its end by the proxy: a
   * later page failed (`failed`), or the shutdown's timeout cut its connection (`shutdown`). Its
   * request is still counted with the status its client got.
   */
  answerCutOff?(operation: string, reason: AnswerCutOff): void;
}

/** Why a streamed answer was cut off before its end (see `Observer.answerCutOff`). */
export type AnswerCutOff = 'failed' | 'shutdown';

/** What a shadow comparison came to. */
export type ShadowOutcomeKind = 'match' | 'mismatch' | 'error' | 'skipped';

/**
 * The events whose methods take at most two arguments: all of them, which `combineObservers`
 * relies on (it forwards two); a method with more fails to compile there.
 */
type TwoArgumentEvent = {
  [K in keyof Observer]-?: Parameters<NonNullable<Observer[K]>>['length'] extends 0 | 1 | 2 ? K : never;
}[keyof Observer];

/**
 * One observer that forwards every event to each of `observers`: their methods are looked up once,
 * here, so an event costs one call per observer that listens to it (none for an event nobody
 * observes), and no argument list is built per event.
 */
export function combineObservers(...observers: readonly Observer[]): Required<Observer> {
  const each = <K extends TwoArgumentEvent>(key: K): Required<Observer>[K] => {
    const methods: ((a?: unknown, b?: unknown) => void)[] = [];
    for (const observer of observers) {
      const method = observer[key] as ((a?: unknown, b?: unknown) => void) | undefined;
      if (method) methods.push(method.bind(observer));
    }
    // Two arguments at most, as every Observer method takes (TwoArgumentEvent checks it).
    const forward =
      methods.length > 1
        ? (a?: unknown, b?: unknown) => {
            for (const method of methods) method(a, b);
          }
        : (methods[0] ?? (() => {}));
    return forward as Required<Observer>[K];
  };
  return {
    request: each('request'),
    successorCall: each('successorCall'),
    tokenRenewal: each('tokenRenewal'),
    authFailure: each('authFailure'),
    kdfRun: each('kdfRun'),
    kdfWaiting: each('kdfWaiting'),
    loginBlock: each('loginBlock'),
    idCacheLookup: each('idCacheLookup'),
    modeRequest: each('modeRequest'),
    legacyUpstreamCall: each('legacyUpstreamCall'),
    shadowComparison: each('shadowComparison'),
    connectionDropped: each('connectionDropped'),
    recordingDropped: each('recordingDropped'),
    answerCutOff: each('answerCutOff'),
  };
}

/**
 * What one unit of work (one legacy request) cost in successor API calls: the request's own
 * counter, handed down explicitly with the calls it makes (`SuccessorRequest.calls`), so no
 * async context tracking runs on the request path. Token calls are shared between requests and
 * are not counted here (the observer's `successorCall` events of kind `token` count them).
 */
export interface CallStats {
  /** HTTP calls to the successor API, retries included. */
  calls: number;
  /** Summed wall time of those API calls, in milliseconds. */
  durationMs: number;
}

const WORD = /^(?:\.?[a-z][a-z_-]{0,40}|v[0-9]{1,3})$/;

/**
 * The route of a successor path for metrics: segments that are words (`users`, `group-flags`,
 * `.well-known`) stay, anything else (UUIDs, base58 IDs, names) becomes `{id}`, so the label set
 * stays bounded.
 */
export function successorRoute(pathname: string): string {
  let route = '';
  let start = 0;
  for (;;) {
    const end = pathname.indexOf('/', start);
    const segment = end === -1 ? pathname.slice(start) : pathname.slice(start, end);
    route += segment === '' || WORD.test(segment) ? segment : '{id}';
    if (end === -1) return route;
    route += '/';
    start = end + 1;
  }
}
