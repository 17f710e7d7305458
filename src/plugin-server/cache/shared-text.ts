/**
 * Cached objects whose text is a slice of one larger string (a whole received batch, see ingest/batch-text.ts).
 *
 * Why: a 1 KB string per object is allocated in V8's young generation and copied twice by the scavenger before it
 * settles in old space; during a sync that copying was the plugin-server's largest cost. One string per batch of
 * 128 KiB or more goes straight to the large-object space, and each object's text is a slice pointing into it.
 *
 * The price: a slice keeps the whole batch string alive. So the store tells each SharedText which slices it keeps
 * (`hold`), which it lets go (`release`) and when a batch is applied (`settle`). Once the slices still kept cover
 * less than half of the string, the remaining ones are copied into strings of their own and the batch string can
 * be collected. The text kept for sliced objects is thus never more than twice what they need.
 */
export interface TextHolder {
  json: string;
  /** The SharedText the json is a slice of, while it is one. */
  text: SharedText | undefined;
}

export class SharedText {
  private holders: TextHolder[] = [];
  private live = 0;
  private settled = false;

  /** `chars`: the length of the string the slices are cut from. */
  constructor(readonly chars: number) {}

  /** A store keeps `h`, whose json is a slice of this text. */
  hold(h: TextHolder): void {
    h.text = this;
    this.holders.push(h);
    this.live += h.json.length;
  }

  /** A store dropped or replaced `h`. */
  release(h: TextHolder): void {
    if (h.text !== this) return;
    h.text = undefined;
    this.live -= h.json.length;
    // Before the batch is settled, more of it may still be held (a batch can replace its own objects).
    if (this.settled && this.live * 2 < this.chars) this.unshare();
  }

  /** Every change of the batch was applied: what was not kept (skipped as not newer) never will be. */
  settle(): void {
    this.settled = true;
    if (this.live * 2 < this.chars) this.unshare();
  }

  /** The slices still kept get their own copies, so nothing refers to the batch string any more. */
  private unshare(): void {
    for (const h of this.holders) {
      if (h.text !== this) continue;
      h.json = ownCopy(h.json);
      h.text = undefined;
    }
    this.holders = [];
    this.live = 0;
  }
}

/**
 * A flat string of its own with the same text. Only ASCII text is ever sliced (batch-text.ts), so a Latin-1 round
 * trip is exact; going through a Buffer is what makes V8 allocate a new string rather than another slice.
 */
function ownCopy(s: string): string {
  return Buffer.from(s, 'latin1').toString('latin1');
}
