// The dpq playground: dpq itself, compiled to WebAssembly, run by this page. No server sees
// a query or a row: the bundled tables are fetched from where the page is served, a table
// the user picks is read in the browser, and budgets live in the page's memory.
import init, { Playground, provideFile, takeCharts, keywords } from "./pkg/dpq.js";

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

const $ = (id) => document.getElementById(id);
const source = $("source");
const highlight = $("highlight");
let session = null;
let words = new Set();

function newSession() {
  const seed = $("seed").value.trim();
  session = new Playground(seed === "" ? undefined : Number(seed));
  $("results").replaceChildren();
  showBudget();
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

function show(text, ok) {
  const pre = document.createElement("pre");
  pre.textContent = text;
  if (!ok) pre.className = "error";
  $("results").append(pre);
}

function showCharts() {
  for (const [name, svg] of JSON.parse(takeCharts())) {
    const figure = document.createElement("figure");
    const img = document.createElement("img");
    // As an image, a chart can run no script, whatever text it holds.
    img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svg);
    img.alt = name;
    const caption = document.createElement("figcaption");
    caption.textContent = name;
    figure.append(img, caption);
    $("results").append(figure);
  }
}

function run(text) {
  const started = performance.now();
  const out = JSON.parse(session.run(text, false, width()));
  for (const r of out) show(r.text, r.ok);
  showCharts();
  showBudget();
  const ms = Math.round(performance.now() - started);
  const failed = out.filter((r) => !r.ok).length;
  $("status").textContent = `${out.length} result${out.length === 1 ? "" : "s"} in ${ms} ms` +
    (failed ? `; ${failed} error${failed === 1 ? "" : "s"}: a failed statement spends nothing, and what follows it does not run` : "");
  $("results").lastElementChild?.scrollIntoView({ block: "nearest" });
  return out;
}

function statementAtCursor() {
  const text = source.value;
  const at = source.selectionStart;
  const start = text.lastIndexOf(";", at - 1) + 1;
  let end = text.indexOf(";", at);
  if (end < 0) end = text.length;
  return text.slice(start, end).replace(/--[^\n]*/g, "").trim();
}

// --- the budget panel --------------------------------------------------------------------

function number(x) {
  return Number.isFinite(x) ? Number(x.toPrecision(6)).toString() : String(x);
}

function showBudget() {
  const b = JSON.parse(session.budget());
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

// --- examples, links and the user's own file ----------------------------------------------

async function fetchText(path) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.text();
}

async function openExample(name, andRun) {
  const path = EXAMPLES[name];
  if (!path) return;
  source.value = await fetchText(path);
  repaint();
  if (andRun) {
    newSession();
    run(source.value);
  }
}

function fromLink() {
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.has("run")) {
    source.value = hash.get("run");
    repaint();
    run(source.value);
    return true;
  }
  if (hash.has("example")) {
    $("example").value = hash.get("example");
    openExample(hash.get("example"), true);
    return true;
  }
  return false;
}

async function main() {
  await init();
  words = new Set(JSON.parse(keywords()));
  await Promise.all(DATA.map(async (path) => {
    const response = await fetch(path);
    if (response.ok) provideFile(path, new Uint8Array(await response.arrayBuffer()));
  }));
  newSession();
  source.addEventListener("input", repaint);
  source.addEventListener("scroll", () => { highlight.scrollTop = source.scrollTop; });
  source.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run(source.value);
    }
  });
  $("run").addEventListener("click", () => run(source.value));
  $("explain").addEventListener("click", () => {
    const statement = statementAtCursor();
    if (statement) run(/^explain\b/i.test(statement) ? `${statement};` : `EXPLAIN ${statement};`);
  });
  $("reset").addEventListener("click", newSession);
  $("seed").addEventListener("change", newSession);
  $("example").addEventListener("change", (e) => openExample(e.target.value, false));
  $("file").addEventListener("change", async (e) => {
    const file = e.target.files[0];
    if (!file) return;
    provideFile(file.name, new Uint8Array(await file.arrayBuffer()));
    source.value += `${source.value.endsWith("\n") || source.value === "" ? "" : "\n"}LOAD '${file.name.replace(/'/g, "''")}';\n`;
    repaint();
    $("status").textContent = `${file.name} is ready to LOAD: it stays in this page.`;
  });
  $("link").addEventListener("click", async () => {
    const link = `${location.origin}${location.pathname}#run=${encodeURIComponent(source.value)}`;
    history.replaceState(null, "", link);
    try { await navigator.clipboard.writeText(link); $("status").textContent = "The link is copied."; }
    catch { $("status").textContent = "The link is in the address bar."; }
  });
  if (!fromLink()) await openExample("quickstart", false);
  document.body.dataset.ready = "true";
}

main().catch((e) => {
  $("status").textContent = `dpq could not start: ${e}`;
});
