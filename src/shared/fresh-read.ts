/**
 * A read that starts after its caller asked, shared by the callers asking at the same time. A read already under
 * way may have started before what the caller wants to see was written (a peer's registration, a definition
 * created through another replica), so a caller never just joins it: it gets the next read, which starts as soon as
 * the one under way ends, and which every caller arriving meanwhile shares. At most one read runs at a time.
 */
export class FreshRead<T> {
  private running: Promise<T> | undefined;
  private next: Promise<T> | undefined;

  constructor(private readonly read: () => Promise<T>) {}

  get(): Promise<T> {
    if (!this.running) return this.start();
    this.next ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.next = undefined;
        return this.start();
      });
    return this.next;
  }

  private start(): Promise<T> {
    const run = this.read();
    this.running = run;
    const done = (): void => {
      if (this.running === run) this.running = undefined;
    };
    run.then(done, done);
    return run;
  }
}
