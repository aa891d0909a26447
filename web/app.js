// The dpq playground: dpq itself, compiled to WebAssembly, run by this page. No server sees
// a query or a row: the bundled tables are fetched from where the page is served, a table
// the user picks is read in the browser, and budgets live in the page's memory.
// dpq runs in a worker of its own (worker.js), so that the page stays responsive and a long
// script can be stopped.

// The largest file the page reads: a table is held in the page's memory (at most 4 GB for a
// WebAssembly module), with room for its columns besides.
const MAX_FILE = 256 * 1024 * 1024;

// The bundled tables, by the paths scripts name them with (as in the repository).
const DATA = [
  "examples/data/people.csv",
  "examples/data/survey.csv",
  "examples/data/incomes.csv",
  "examples/data/census.csv",
  "examples/data/visits.csv",
  "examples/attack/class.csv",
];

const EXAMPLES = {
  quickstart: "examples/quickstart.dpq",
  bayes: "examples/bayes.dpq",
  cube: "examples/cube.dpq",
  breakdown: "examples/breakdown.dpq",
  income: "examples/income.dpq",
  lab: "examples/lab.dpq",
  "xiao-xiong": "examples/xiao-xiong.dpq",
  visits: "examples/visits.dpq",
  attack: "examples/attack/attack.dpq",
};
for (let i = 1; i <= 8; i++) EXAMPLES[`fig${i}`] = `examples/figures/fig${i}.dpq`;
// The optimal-noise slides, one script per table, and data-dependent releases on a table.
for (const name of ["data-dependent", "absolute-frequency", "relative-frequency", "maximum", "multiple-queries", "single-query"]) {
  EXAMPLES[`slides-${name}`] = `examples/slides/${name}.dpq`;
}

const $ = (id) => document.getElementById(id);
const source = $("source");
const highlight = $("highlight");
let words = new Set();

// --- dpq's worker: every call is a message, answered with a result or an error ------------

let worker = null;
let nextId = 0;
const pending = new Map();
// Every file handed over, to hand over again to a new worker.
const provided = new Map();

function startWorker() {
  worker?.terminate();
  for (const { reject } of pending.values()) reject(new Error("stopped"));
  pending.clear();
  worker = new Worker("worker.js", { type: "module" });
  worker.onmessage = ({ data }) => {
    const call = pending.get(data.id);
    pending.delete(data.id);
    if (!call) return;
    if ("error" in data) call.reject(new Error(data.error));
    else call.resolve(data.result);
  };
  worker.onerror = (e) => {
    for (const { reject } of pending.values()) reject(new Error(e.message ?? "the worker failed"));
    pending.clear();
  };
}

function call(op, args) {
  return new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, op, args });
  });
}

async function provide(path, bytes) {
  provided.set(path, bytes);
  await call("provide", { path, bytes });
}

// A new worker, every file handed over again, and a new session: after a trap or a Stop.
async function restart() {
  startWorker();
  for (const [path, bytes] of provided) await call("provide", { path, bytes });
  await newSession();
}

// One thing at a time: whatever the user starts (a run, an explanation, the attack curve, a
// new session, a seed, a file, a link) waits for nothing and is refused while another runs;
// only Stop interrupts. The controls say so by being disabled.
let running = false;
let stopping = false;

function busy(on) {
  $("stop").disabled = !on;
  for (const id of ["run", "explain", "curve", "reset", "seed", "file"]) $(id).disabled = on;
}

async function exclusive(work) {
  if (running || stopping) {
    $("status").textContent = "dpq is busy: wait for it, or Stop it";
    return;
  }
  running = true;
  busy(true);
  try {
    await work();
  } catch (e) {
    if (!stopping) $("status").textContent = e.message;
  } finally {
    // A Stop ends the work by ending its worker; Stop itself frees the page once the new
    // worker is ready.
    if (!stopping) {
      running = false;
      busy(false);
    }
  }
}

// The seed field's value: none, or a whole number from 0 to 2^32 - 1 (anything else is refused,
// never wrapped round to another seed).
function seedValue() {
  const text = $("seed").value.trim();
  if (text === "") return undefined;
  const seed = Number(text);
  if (!Number.isInteger(seed) || seed < 0 || seed > 4294967295) {
    throw new Error(`the seed must be a whole number from 0 to 4294967295, not ${text}`);
  }
  return seed;
}

async function newSession() {
  let seed;
  try {
    seed = seedValue();
  } catch (e) {
    $("status").textContent = `${e.message}: the session goes on unseeded`;
    $("seed").value = "";
  }
  await call("session", { seed });
  $("results").replaceChildren();
  showBudget("null");
}

// --- the editor: keywords, strings, numbers and comments coloured under the text --------

function escapeHtml(text) {
  return text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

function colour(text) {
  const token = /(--[^\n]*)|('(?:[^']|'')*'?)|("(?:[^"]|"")*"?)|(\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b)|([A-Za-z_][A-Za-z0-9_]*)/g;
  let out = "";
  let last = 0;
  for (const m of text.matchAll(token)) {
    out += escapeHtml(text.slice(last, m.index));
    const t = escapeHtml(m[0]);
    if (m[1]) out += `<span class="comment">${t}</span>`;
    else if (m[2]) out += `<span class="str">${t}</span>`;
    else if (m[4]) out += `<span class="num">${t}</span>`;
    else if (m[5] && words.has(m[5].toUpperCase())) out += `<span class="kw">${t}</span>`;
    else out += t;
    last = m.index + m[0].length;
  }
  return out + escapeHtml(text.slice(last)) + "\n";
}

function repaint() {
  highlight.innerHTML = colour(source.value);
  highlight.scrollTop = source.scrollTop;
}

// --- running -----------------------------------------------------------------------------

function width() {
  // The results pane's width in characters of its monospace font.
  const probe = document.createElement("pre");
  probe.textContent = "x".repeat(100);
  probe.style.position = "absolute";
  probe.style.visibility = "hidden";
  $("results").append(probe);
  const perChar = probe.getBoundingClientRect().width / 100;
  probe.remove();
  const columns = Math.floor(($("results").clientWidth - 20) / (perChar || 8));
  return Math.max(40, Math.min(columns, 160));
}

// A result, an error (`ok` false) or help (`kind` "help": prose, wrapped as errors are).
function show(text, ok, kind) {
  const pre = document.createElement("pre");
  pre.textContent = text;
  if (!ok) pre.className = "error";
  else if (kind) pre.className = kind;
  $("results").append(pre);
}

// A chart in the results: as an image, a chart can run no script, whatever text it holds.
function showFigure(svg, alt, text) {
  const figure = document.createElement("figure");
  const img = document.createElement("img");
  img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svg);
  img.alt = alt;
  const caption = document.createElement("figcaption");
  caption.textContent = text;
  figure.append(img, caption);
  $("results").append(figure);
  return figure;
}

// A statement's result, and under it the charts it drew.
function showResult(r) {
  show(r.text, r.ok, r.help ? "help" : undefined);
  for (const [name, svg] of r.charts ?? []) showFigure(svg, name, name);
}

async function run(text) {
  const started = performance.now();
  let answer;
  try {
    answer = await call("run", { text, width: width() });
  } catch (e) {
    if (stopping) return [];
    // dpq stopped inside (a bug, or the page's memory is full): that session cannot go on.
    await restart();
    show(`dpq stopped on this script (${e.message}). The session was started afresh: every ` +
      "budget is full again, and nothing before it is kept.", false);
    $("status").textContent = "dpq stopped; a new session was started";
    return [];
  }
  const out = JSON.parse(answer.results);
  for (const r of out) showResult(r);
  showBudget(answer.budget);
  const ms = Math.round(performance.now() - started);
  const failed = out.filter((r) => !r.ok).length;
  $("status").textContent = `${out.length} result${out.length === 1 ? "" : "s"} in ${ms} ms` +
    (failed ? `; ${failed} error${failed === 1 ? "" : "s"}: a failed statement spends nothing, and what follows it does not run` : "");
  $("results").lastElementChild?.scrollIntoView({ block: "nearest" });
  return out;
}

// Ends the worker, and with it the script it runs: the session is lost, and a new one starts.
async function stop() {
  if (stopping) return;
  stopping = true;
  try {
    await restart();
  } finally {
    stopping = false;
    running = false;
    busy(false);
  }
  show("Stopped. The session was started afresh: every budget is full again, and tables " +
    "must be loaded again.", false);
  $("status").textContent = "stopped; a new session was started";
}

// `EXPLAIN` of the statement at the cursor, split as dpq splits a script (a `;` in a comment
// or a string ends nothing).
function explainAtCursor() {
  const text = source.value;
  const offset = new TextEncoder().encode(text.slice(0, source.selectionStart)).length;
  return call("explain", { text, offset });
}

// --- the budget panel --------------------------------------------------------------------

function number(x) {
  return Number.isFinite(x) ? Number(x.toPrecision(6)).toString() : String(x);
}

function showBudget(budget) {
  const b = JSON.parse(budget);
  const panel = $("budget");
  if (!b || b.kind !== "budget") {
    panel.textContent = "No table loaded yet.";
    return;
  }
  const bar = (spent, total) =>
    `<span class="bar" style="width:${Math.min(100, (100 * spent) / (total || 1)).toFixed(1)}px"></span>`;
  let html = `<p>Table <b>${escapeHtml(b.table)}</b>: ${number(b.spent)} of ${number(b.total)} spent, ` +
    `${number(b.remaining)} remaining ${bar(b.spent, b.total)}<br>Neighbours: <b>${escapeHtml(b.neighbours)}</b> ` +
    (b.neighbours === "replace"
      ? "(tables that differ by one replaced row; n is public)"
      : "(tables that differ by one added or removed row; n is private)") + "</p>";
  if (b.cells) {
    html += "<table><tr><th>cell</th><th>spent</th><th>remaining</th></tr>" +
      b.cells.map((c) => `<tr><td>${escapeHtml(c.cell)}</td><td>${number(c.spent)} ${bar(c.spent, b.total)}</td><td>${number(c.remaining)}</td></tr>`).join("") +
      "</table>";
    if (b.pair) html += `<p>Costliest pair of cells: ${escapeHtml(b.pair.cells.join(" and "))}, ${number(b.pair.cost)}</p>`;
  }
  panel.innerHTML = html;
}

// --- the attack lab's curve: reconstruction against epsilon --------------------------------

// Runs the attack lab's 24 group counts at several epsilons, each in fresh seeded sessions,
// takes dpq's least-squares estimate of every student's answer (ESTIMATE), and plots the share
// of students whose answer the estimate gives (above one half: yes) against the epsilon all
// 24 answers spent together. The truth comes from the class's file, which the teacher has.
async function attackCurve() {
  const script = await fetchText(EXAMPLES.attack);
  const lines = script.split("\n");
  const setup = lines.filter((l) => /^(LOAD|CUBE)\b/.test(l)).join("\n");
  const groups = lines.filter((l) => /^COUNT WHERE id IN/.test(l)).slice(0, 24)
    .map((l) => l.replace(/WITH EPS [0-9.]+;$/, ""));
  const students = lines.filter((l) => /^ESTIMATE\b/.test(l)).slice(0, 12);
  const truth = (await fetchText("examples/attack/class.csv")).trim().split("\n").slice(1)
    .map((l) => l.endsWith(",yes"));
  const perQuestion = [0.01, 0.1, 0.3, 1, 3, 10];
  const trials = 3;
  const points = [];
  for (const [k, eps] of perQuestion.entries()) {
    const script = [setup, "SET BUDGET 1000000;", ...groups.map((g) => `${g}WITH EPS ${eps};`), ...students].join("\n");
    const seeds = Array.from({ length: trials }, (_, t) => 1000 + 100 * k + t);
    let right;
    try {
      right = await call("attack", { script, seeds, truth });
    } catch (e) {
      if (!stopping) $("status").textContent = `the attack curve stopped: ${e.message}`;
      return null;
    }
    points.push([24 * eps, right / (trials * truth.length)]);
    $("status").textContent = `attack curve: ${k + 1} of ${perQuestion.length} epsilons`;
  }
  showCurve(points, truth);
  $("status").textContent = "attack curve: done";
  window.attackCurvePoints = points;
  return points;
}

function showCurve(points, truth) {
  const W = 560, H = 320, L = 60, R = 20, T = 40, B = 50;
  const lx = (x) => Math.log10(x);
  const [x0, x1] = [lx(points[0][0]), lx(points[points.length - 1][0])];
  const px = (x) => L + ((lx(x) - x0) / (x1 - x0)) * (W - L - R);
  const py = (y) => H - B - y * (H - T - B);
  const guess = Math.max(truth.filter((x) => x).length, truth.filter((x) => !x).length) / truth.length;
  let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">` +
    `<rect width="${W}" height="${H}" fill="white"/>` +
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">Students whose answer the attack recovers</text>` +
    `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="black"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="black"/>`;
  for (const y of [0, 0.25, 0.5, 0.75, 1]) svg += `<text x="${L - 6}" y="${py(y) + 4}" text-anchor="end">${y * 100}%</text><line x1="${L}" y1="${py(y)}" x2="${W - R}" y2="${py(y)}" stroke="#eee"/>`;
  for (const [x] of points) svg += `<text x="${px(x)}" y="${H - B + 16}" text-anchor="middle">${Number(x.toPrecision(2))}</text>`;
  svg += `<text x="${W / 2}" y="${H - 12}" text-anchor="middle">epsilon spent by the 24 answers together (log scale)</text>`;
  svg += `<line x1="${L}" y1="${py(guess)}" x2="${W - R}" y2="${py(guess)}" stroke="#999" stroke-dasharray="4,3"/>` +
    `<text x="${W - R}" y="${py(guess) - 4}" text-anchor="end" fill="#666">guessing the commoner answer for all</text>`;
  svg += `<polyline fill="none" stroke="#d62728" stroke-width="2" points="${points.map(([x, y]) => `${px(x)},${py(y)}`).join(" ")}"/>`;
  for (const [x, y] of points) svg += `<circle cx="${px(x)}" cy="${py(y)}" r="3" fill="#d62728"/>`;
  svg += "</svg>";
  const figure = showFigure(svg, "reconstruction rate against epsilon",
    "The attack lab against epsilon: 3 seeded runs per point, each student's answer " +
    "taken as yes when dpq's estimate exceeds one half. Under a budget of 1 (left of 1) the attack does " +
    "little better than a guess; with a budget in the tens it recovers every answer.");
  figure.scrollIntoView({ block: "nearest" });
}

// --- examples, links and the user's own file ----------------------------------------------

async function fetchText(path) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.text();
}

async function openExample(name, andRun) {
  if (!Object.hasOwn(EXAMPLES, name)) {
    $("status").textContent = `no example called ${name}`;
    return;
  }
  const path = EXAMPLES[name];
  source.value = await fetchText(path);
  repaint();
  if (andRun) {
    await newSession();
    await run(source.value);
  } else {
    keep();
  }
}

function fromLink() {
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.has("run")) {
    exclusive(async () => {
      source.value = hash.get("run");
      repaint();
      await run(source.value);
    });
    return true;
  }
  if (hash.has("example")) {
    exclusive(async () => {
      $("example").value = hash.get("example");
      await openExample(hash.get("example"), true);
    });
    return true;
  }
  return false;
}

// --- the script kept in this browser ------------------------------------------------------

// The script in the editor is kept in this browser's storage (never sent anywhere) as the
// user writes it or picks an example, and is back on the next visit; a script opened by a
// link is not kept over it. A first visit, with nothing kept, opens the quickstart.
const KEPT = "dpq-playground-script";

function kept() {
  try {
    return localStorage.getItem(KEPT) ?? "";
  } catch {
    return ""; // storage turned off: every visit is a first one
  }
}

function keep() {
  try {
    localStorage.setItem(KEPT, source.value);
  } catch {
    // storage turned off or full: the script is simply not kept
  }
}

// The editor's first script, shown at once, before dpq has loaded: the script kept from the
// last visit, else the quickstart, ready to run. Returns a word for the status line.
async function firstScript() {
  const script = kept();
  if (script.trim() !== "") {
    source.value = script;
    repaint();
    return "Your script from the last visit is back (kept in this browser only): press Run or Ctrl+Enter to run it.";
  }
  const quickstart = await fetchText(EXAMPLES.quickstart);
  // Unless the user has started typing meanwhile.
  if (source.value !== "") return "";
  $("example").value = "quickstart";
  source.value = quickstart;
  repaint();
  return "The quickstart is ready: press Run (or Ctrl+Enter) to run it, and type help for the statements.";
}

async function main() {
  source.addEventListener("input", () => { repaint(); keep(); });
  const linked = new URLSearchParams(location.hash.slice(1));
  let ready = "";
  if (!linked.has("run") && !linked.has("example")) {
    $("status").textContent = "dpq is loading...";
    ready = await firstScript();
  }
  startWorker();
  words = new Set(JSON.parse(await call("keywords")));
  repaint();
  await Promise.all(DATA.map(async (path) => {
    const response = await fetch(path);
    if (response.ok) await provide(path, new Uint8Array(await response.arrayBuffer()));
  }));
  await newSession();
  source.addEventListener("scroll", () => { highlight.scrollTop = source.scrollTop; });
  source.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      exclusive(() => run(source.value));
    }
  });
  $("run").addEventListener("click", () => exclusive(() => run(source.value)));
  $("explain").addEventListener("click", () => exclusive(async () => {
    const statement = await explainAtCursor();
    if (statement) await run(statement);
  }));
  $("reset").addEventListener("click", () => exclusive(newSession));
  $("stop").addEventListener("click", stop);
  $("curve").addEventListener("click", () => exclusive(attackCurve));
  $("seed").addEventListener("change", () => exclusive(newSession));
  $("example").addEventListener("change", (e) => openExample(e.target.value, false));
  $("file").addEventListener("change", (e) => exclusive(async () => {
    const file = e.target.files[0];
    if (!file) return;
    if (file.size > MAX_FILE) {
      $("status").textContent = `${file.name} is ${Math.round(file.size / 2 ** 20)} MB: the page reads files up to ${MAX_FILE / 2 ** 20} MB (dpq on the command line reads any size)`;
      return;
    }
    try {
      await provide(file.name, new Uint8Array(await file.arrayBuffer()));
    } catch (error) {
      $("status").textContent = `${file.name} could not be read: ${error}`;
      return;
    }
    source.value += `${source.value.endsWith("\n") || source.value === "" ? "" : "\n"}LOAD '${file.name.replace(/'/g, "''")}';\n`;
    repaint();
    $("status").textContent = `${file.name} is ready to LOAD: it stays in this page.`;
  }));
  $("link").addEventListener("click", async () => {
    let link;
    try {
      link = `${location.origin}${location.pathname}#run=${encodeURIComponent(source.value)}`;
    } catch (error) {
      $("status").textContent = `no link for this script: ${error}`;
      return;
    }
    history.replaceState(null, "", link);
    try { await navigator.clipboard.writeText(link); $("status").textContent = "The link is copied."; }
    catch { $("status").textContent = "The link is in the address bar."; }
  });
  window.addEventListener("hashchange", fromLink);
  if (!fromLink()) $("status").textContent = ready;
  document.body.dataset.ready = "true";
}

main().catch((e) => {
  $("status").textContent = `dpq could not start: ${e}`;
});
