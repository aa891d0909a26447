// dpq's own thread in the page: the page stays responsive while a script runs, and a long one
// (a SIMULATE of 10^9 runs, say) can be stopped by ending this worker. Messages are
// {id, op, args}; each is answered with {id, result} or {id, error}.
// The chart library dpq draws with (plotters) measures a label through the page's DOM when it
// runs in a browser: a span's offset size. A worker has no DOM, so it gets the few pieces that
// measurement touches, answering as plotters measures text natively (its "naive" estimate: a
// character 0.7 em wide, em = size / 1.24^2), so that charts come out as on the command line.
class Measured {
  constructor() { this.text = ""; this.size = 12; }
  set textContent(text) { this.text = text ?? ""; }
  setAttribute(name, value) {
    const size = /font-size:\s*([0-9.]+)px/.exec(value);
    if (name === "style" && size) this.size = Number(size[1]);
  }
  get offsetWidth() { return Math.round((this.size / 1.24 / 1.24) * 0.7 * new TextEncoder().encode(this.text).length); }
  get offsetHeight() { const em = this.size / 1.24 / 1.24; return Math.round(em * 0.24) + Math.round(em); }
  remove() {}
}
self.Window = self.constructor;
self.HTMLElement = Measured;
self.document = { body: { append() {}, appendChild() {} }, createElement: () => new Measured() };

// Loaded after the stand-ins above are in place; messages wait for it (the handler is set at
// once, so that none that arrives while loading is lost).
let dpq = null;
const ready = import("./pkg/dpq.js").then(async (module) => {
  await module.default();
  dpq = module;
});
let session = null;

const ops = {
  // Files handed over to LOAD, by path: the bundled data and the user's own.
  provide: ({ path, bytes }) => dpq.provideFile(path, new Uint8Array(bytes)),
  keywords: () => dpq.keywords(),
  session: ({ seed }) => {
    try { session?.free(); } catch { /* a session broken by a trap cannot be freed */ }
    session = new dpq.Playground(seed);
  },
  // Each result carries the charts its statement drew, for the page to show under it.
  run: ({ text, width }) => ({ results: session.run(text, false, width), budget: session.budget() }),
  explain: ({ text, offset }) => dpq.explainAt(text, offset),
  // The attack lab at one epsilon per question, in fresh seeded sessions: how many students'
  // answers dpq's estimates give (yes when an estimate exceeds one half).
  attack: ({ script, seeds, truth }) => {
    let right = 0;
    for (const seed of seeds) {
      const lab = new dpq.Playground(seed);
      const found = JSON.parse(lab.run(script, true, undefined))
        .filter((r) => r.ok).map((r) => JSON.parse(r.text)).filter((r) => r.kind === "estimate");
      lab.free();
      found.forEach((r, i) => { if ((r.estimate > 0.5) === truth[i]) right++; });
    }
    return right;
  },
};

self.onmessage = async ({ data: { id, op, args } }) => {
  await ready;
  try {
    self.postMessage({ id, result: ops[op](args ?? {}) });
  } catch (e) {
    self.postMessage({ id, error: String(e) });
  }
};
