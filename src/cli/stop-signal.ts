/**
 * The stop signals of `idm-compat serve`: the first SIGINT or SIGTERM from the moment this is
 * called. The binary calls it first thing for `serve` (bin/idm-compat.js) and hands it to the
 * command through its CommandIo, so a signal that arrives while the proxy loads its modules and
 * starts is kept, and the proxy shuts down gracefully once it has started, instead of Node's
 * default for an unhandled signal (the process ends with nothing flushed); on Node 24 and later
 * except while the binary replaces itself (src/cli/young-generation.ts). Once a signal arrived
 * the handlers go, so a second one ends the process at once (`serve` then exits itself, with a
 * line saying so and its log written: src/cli/serve.ts).
 */
export interface StopSignal {
  /** Resolves with the first stop signal. */
  readonly received: Promise<NodeJS.Signals>;
  /** That signal once it arrived (the binary does not replace a process that is asked to stop). */
  readonly caught: NodeJS.Signals | undefined;
  /** Stops listening (the handlers go). */
  cancel(): void;
}

/** Listens for the first SIGINT or SIGTERM from now on. */
export function nextStopSignal(): StopSignal {
  let caught: NodeJS.Signals | undefined;
  let cancel = () => {};
  const received = new Promise<NodeJS.Signals>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      cancel();
      caught = signal;
      resolve(signal);
    };
    cancel = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  return {
    received,
    get caught() {
      return caught;
    },
    cancel: () => cancel(),
  };
}
