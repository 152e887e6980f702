/**
 * Values worked out once per pair of keys, both objects held weakly: what the mapping derives from
 * a compiled profile's parts and the constant lists handlers pass (field lists, wanted
 * attributes), so a request looks them up instead of building them again.
 */
export class PairMemo<A extends object, B extends object, V> {
  readonly #byFirst = new WeakMap<A, WeakMap<B, V>>();

  /** The value for (a, b), made by `make` the first time it is asked for. */
  get(a: A, b: B, make: () => V): V {
    let bySecond = this.#byFirst.get(a);
    if (!bySecond) {
      bySecond = new WeakMap();
      this.#byFirst.set(a, bySecond);
    }
    let value = bySecond.get(b);
    if (value === undefined) {
      value = make();
      bySecond.set(b, value);
    }
    return value;
  }
}
