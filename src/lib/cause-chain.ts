/**
 * `error` and the causes it wraps, outermost first: at most eight (wrappers nest a few deep, and
 * a cycle of causes ends there).
 */
export function causeChain(error: unknown): object[] {
  const chain: object[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    chain.push(current);
    current = Reflect.get(current, 'cause');
  }
  return chain;
}
