/** One failed constraint in a 422 (or 400) problem document. */
export interface Violation {
  propertyPath: string;
  message: string;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** The reason phrase used as a problem's `title`. */
export function statusTitle(status: number): string {
  return TITLES[status] ?? (status >= 500 ? 'Server Error' : 'Error');
}

/** The RFC 7807 media type every sandbox error is served with. */
export const PROBLEM_TYPE = 'application/problem+json';

/** An error a handler throws to answer with an RFC 7807 problem document. */
export class ProblemError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly options: { violations?: Violation[]; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = 'ProblemError';
  }
}

/** The body of a problem document, API Platform style (`type: /errors/<status>`). */
export function problemBody(
  status: number,
  detail: string,
  violations?: Violation[],
): Record<string, unknown> {
  return {
    type: `/errors/${status}`,
    title: statusTitle(status),
    detail,
    status,
    ...(violations ? { violations } : {}),
  };
}

/** Renders a problem as a Response with `application/problem+json`. */
export function problemResponse(
  status: number,
  detail: string,
  options: { violations?: Violation[]; headers?: Record<string, string> } = {},
): Response {
  return new Response(JSON.stringify(problemBody(status, detail, options.violations)), {
    status,
    headers: { 'content-type': PROBLEM_TYPE, ...options.headers },
  });
}

/** Renders a thrown ProblemError. */
export function renderProblem(error: ProblemError): Response {
  return problemResponse(error.status, error.detail, error.options);
}

/** Throws a 404 problem for an unknown entity. */
export function notFound(what: string, id: string): never {
  throw new ProblemError(404, `${what} "${id}" not found.`);
}

/** Throws a 422 problem with the given violations. */
export function unprocessable(violations: Violation[], detail?: string): never {
  throw new ProblemError(422, detail ?? violations.map((v) => `${v.propertyPath}: ${v.message}`).join('\n'), {
    violations,
  });
}
