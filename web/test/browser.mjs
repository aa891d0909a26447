// Tests of the dpq playground in a real browser: the distribution's Chromium, driven by
// Playwright's core (no browser download), against web/dist served over loopback by a plain
// static server started here. Run `bash web/build.sh` first, then `node web/test/browser.mjs`.
// A screenshot of each page tested is kept in web/test/artifacts/.
import { chromium } from "playwright-core";
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.resolve(here, "..", "dist");
const root = path.resolve(here, "..", "..");
const artifacts = path.join(here, "artifacts");
fs.mkdirSync(artifacts, { recursive: true });

const TYPES = {
  ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".wasm": "application/wasm",
  ".csv": "text/csv", ".dpq": "text/plain", ".svg": "image/svg+xml",
};

// A static server of web/dist, as any static server would serve it.
function serve() {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://localhost");
    const file = path.join(dist, decodeURIComponent(url.pathname === "/" ? "/index.html" : url.pathname));
    if (!file.startsWith(dist) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": TYPES[path.extname(file)] ?? "application/octet-stream" });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const results = (page) => page.$$eval("#results pre", (pres) => pres.map((p) => ({ text: p.textContent, error: p.classList.contains("error") })));

async function waitForResults(page, count, timeout = 60000) {
  await page.waitForFunction((n) => document.querySelectorAll("#results pre").length >= n, count, { timeout });
  return results(page);
}

const tests = [];
const test = (name, body) => tests.push({ name, body });

// A link with #example=quickstart opens the page and runs the quickstart. The time to its
// first result (from the navigation, the module's download and start included) is measured
// and recorded, not asserted: the machine is shared (target: within 2 s; docs/playground.md).
test("a link runs the quickstart", async (page, base) => {
  const started = Date.now();
  await page.goto(`${base}/#example=quickstart`);
  await waitForResults(page, 1);
  const first = Date.now() - started;
  const out = await waitForResults(page, 4);
  assert.ok(out.every((r) => !r.error), JSON.stringify(out));
  assert.match(out[0].text, /Loaded table people/);
  assert.match(out[1].text, /noisy count/);
  assert.match(out[1].text, /Bayes estimate/);
  const budget = await page.textContent("#budget");
  assert.match(budget, /0\.1 of 1 spent/);
  assert.match(budget, /replace/);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(artifacts, "playground.png") });
  console.log(`  first result ${first} ms after opening`);
  return { first_result_ms: first };
});

// With a seed, the page's dpq draws the noise the command line draws with that seed.
test("a seeded run answers as the command line does", async (page, base) => {
  await page.goto(base);
  await page.waitForSelector("body[data-ready=true]");
  await page.fill("#seed", "2");
  await page.dispatchEvent("#seed", "change");
  const script = fs.readFileSync(path.join(root, "examples/quickstart.dpq"), "utf8");
  await page.fill("#source", script);
  await page.click("#run");
  const out = await waitForResults(page, 4);
  const golden = fs.readFileSync(path.join(root, "tests/golden/examples/quickstart.out"), "utf8");
  const noisy = golden.match(/noisy count\s+┆ ([0-9.]+)/)[1];
  assert.ok(out[1].text.includes(noisy), `the page's count: ${out[1].text}`);
  assert.match(out[1].text, /NOT private/);
});

// Explain says what the statement at the cursor would cost, and spends nothing.
test("Explain explains the statement at the cursor", async (page, base) => {
  await page.goto(`${base}/#run=${encodeURIComponent("LOAD 'examples/data/people.csv';\nCOUNT WHERE age < 30 WITH EPS 0.5;")}`);
  await waitForResults(page, 2);
  await page.click("#source");
  await page.evaluate(() => { const s = document.getElementById("source"); s.selectionStart = s.selectionEnd = s.value.length - 5; });
  await page.click("#explain");
  const out = await waitForResults(page, 3);
  assert.match(out[2].text, /EXPLAIN COUNT WHERE age < 30 WITH EPS 0\.5/);
  assert.match(out[2].text, /Nothing was done/);
  assert.match(await page.textContent("#budget"), /0\.5 of 1 spent/);
});

// Explain splits the script as dpq does: a `;` in a comment or a string ends nothing.
test("Explain finds the statement as dpq splits the script", async (page, base) => {
  const script = "LOAD 'examples/data/people.csv';\n-- a comment; with a semicolon\nCOUNT WHERE sex = 'F;M' OR age < 20 WITH EPS 0.2;\n";
  await page.goto(`${base}/#run=${encodeURIComponent(script)}`);
  await waitForResults(page, 2);
  await page.evaluate(() => { const s = document.getElementById("source"); s.focus(); s.selectionStart = s.selectionEnd = s.value.indexOf("OR age"); });
  await page.click("#explain");
  const out = await waitForResults(page, 3);
  assert.match(out[2].text, /^EXPLAIN COUNT WHERE sex = 'F;M' OR age < 20 WITH EPS 0\.2/);
  assert.ok(!out[2].error, out[2].text);
});

// Odd input meets an error, never a dead page: the largest epsilon there is for a mean, an
// example that is no example, a seed out of range.
test("odd input gets an error and the page goes on", async (page, base) => {
  await page.goto(`${base}/#run=${encodeURIComponent("LOAD 'examples/data/people.csv'; MEAN age CLAMP (0, 1) WITH EPS 79228162514264337593543950335;")}`);
  let out = await waitForResults(page, 2);
  assert.ok(out[1].error, out[1].text);
  await page.goto(`${base}/#example=__proto__`);
  await page.waitForSelector("body[data-ready=true]");
  assert.match(await page.textContent("#status"), /no example called __proto__/);
  await page.fill("#seed", "4294967298");
  await page.dispatchEvent("#seed", "change");
  assert.match(await page.textContent("#status"), /seed must be a whole number/);
  await page.fill("#source", "LOAD 'examples/data/people.csv'; COUNT WHERE age < 30 WITH EPS 0.1;");
  await page.click("#run");
  out = await waitForResults(page, 2);
  assert.ok(out.every((r) => !r.error), JSON.stringify(out));
  assert.ok(!/seed/.test(out[1].text), "unseeded");
});

// A script that would run for minutes (dpq runs in a worker of its own) leaves the page
// responsive and is stopped by Stop; a new session then answers.
test("Stop ends a long script and the page goes on", async (page, base) => {
  await page.goto(`${base}/#run=${encodeURIComponent("SIMULATE N 100 P 0.3 EPS (0.1, 0.2, 0.3) RUNS 100000000;")}`);
  await page.waitForSelector("#stop:not([disabled])");
  // The page answers while dpq works, and refuses a second run (Ctrl+Enter bypasses no
  // button): Stop stays the way out.
  assert.equal(await page.evaluate(() => 1 + 1), 2);
  await page.focus("#source");
  await page.keyboard.press("Control+Enter");
  assert.match(await page.textContent("#status"), /busy/);
  assert.equal(await page.isDisabled("#stop"), false);
  await page.fill("#source", "LOAD 'examples/data/people.csv'; COUNT WHERE age < 30 WITH EPS 0.1;");
  // Run pressed at once after Stop waits for the new session, and is not lost.
  await page.click("#stop");
  await page.click("#run");
  const out = await waitForResults(page, 3);
  assert.match(out[out.length - 1].text, /noisy count/);
  assert.match(await page.textContent("#budget"), /0\.1 of 1 spent/);
});

// The attack lab: under the budget no answer comes back; with it raised, every one does.
test("the attack lab reconstructs the answers only when the budget allows", async (page, base) => {
  await page.goto(`${base}/#example=attack`);
  await page.waitForFunction(() => [...document.querySelectorAll("#results pre")].filter((p) => p.textContent.startsWith("ESTIMATE")).length >= 24, null, { timeout: 120000 });
  const out = await results(page);
  assert.ok(out.every((r) => !r.error), out.filter((r) => r.error).map((r) => r.text).join("\n"));
  const estimates = out.filter((r) => r.text.startsWith("ESTIMATE")).map((r) => Number(r.text.match(/estimate\s+┆ (-?[0-9.]+)/)[1]));
  const truth = fs.readFileSync(path.join(root, "examples/attack/class.csv"), "utf8").trim().split("\n").slice(1).map((l) => l.endsWith(",yes") ? 1 : 0);
  const exposed = estimates.slice(12).map((x) => (Math.round(x) === 1 ? 1 : 0));
  assert.deepEqual(exposed, truth);
  const far = estimates.slice(0, 12).filter((x, i) => Math.abs(x - truth[i]) > 0.5).length;
  console.log(`  under the budget, ${far} of 12 estimates are off by more than a half`);
  assert.ok(far >= 6, `${far} of 12 off`);
});

// Every bundled example runs in the page without an error, as in the golden transcripts.
test("every bundled example runs in the page", async (page, base) => {
  const names = await (async () => {
    await page.goto(base);
    await page.waitForSelector("body[data-ready=true]");
    return page.$$eval("#example option", (os) => os.map((o) => o.value).filter((v) => v));
  })();
  assert.ok(names.length >= 23, names.join(" "));
  const times = {};
  for (const name of names) {
    const started = Date.now();
    await page.goto("about:blank");
    await page.goto(`${base}/#example=${name}`);
    await page.waitForFunction(() => /results? in \d+ ms/.test(document.getElementById("status").textContent), null, { timeout: 300000 });
    const out = await results(page);
    assert.ok(out.length > 0, name);
    const errors = out.filter((r) => r.error).map((r) => r.text);
    assert.deepEqual(errors, [], `${name}: ${errors.join("\n")}`);
    times[name] = Date.now() - started;
  }
  console.log(`  ${names.length} examples: ${JSON.stringify(times)}`);
});

// The attack curve: the share of answers recovered rises from a guess to all of them as the
// epsilon the 24 answers spend grows.
test("the attack curve rises from a guess to every answer", async (page, base) => {
  await page.goto(base);
  await page.waitForSelector("body[data-ready=true]");
  await page.click("#curve");
  await page.waitForSelector("#results figure img[alt='reconstruction rate against epsilon']", { timeout: 300000 });
  const points = await page.evaluate(() => window.attackCurvePoints);
  console.log(`  recovered: ${points.map(([x, y]) => `${Number(x.toPrecision(2))}: ${Math.round(100 * y)}%`).join(", ")}`);
  assert.ok(points[0][1] < 0.85, `at epsilon ${points[0][0]}: ${points[0][1]}`);
  assert.equal(points[points.length - 1][1], 1);
});

// The paper's figures draw their charts inline.
// With seed 2, as the golden transcripts run it, the page draws the very chart the command
// line draws (examples/figures/fig1.svg).
test("a figure's chart is drawn in the page as on the command line", async (page, base) => {
  await page.goto(base);
  await page.waitForSelector("body[data-ready=true]");
  await page.fill("#seed", "2");
  await page.dispatchEvent("#seed", "change");
  await page.fill("#source", fs.readFileSync(path.join(root, "examples/figures/fig1.dpq"), "utf8"));
  await page.click("#run");
  await page.waitForSelector("#results figure img", { timeout: 120000 });
  const src = await page.getAttribute("#results figure img", "src");
  const svg = decodeURIComponent(src.slice(src.indexOf(",") + 1));
  assert.ok(svg.includes("Noise standard deviation"));
  const native = fs.readFileSync(path.join(root, "examples/figures/fig1.svg"), "utf8");
  assert.equal(svg, native);
});

// A user's own file is read in the page and loaded by its name.
test("a file the user picks is loaded in the page", async (page, base) => {
  await page.goto(base);
  await page.waitForSelector("body[data-ready=true]");
  await page.fill("#source", "");
  await page.setInputFiles("#file", { name: "mine.csv", mimeType: "text/csv", buffer: Buffer.from("x,y\n1,a\n2,b\n3,a\n") });
  await page.waitForFunction(() => document.getElementById("source").value.includes("LOAD 'mine.csv'"));
  await page.click("#run");
  const out = await waitForResults(page, 1);
  assert.match(out[0].text, /n = 3 rows/);
});

// The lab's Monte Carlo in the browser against the native binary, 100,000 runs.
test("a 100,000-run SIMULATE, timed against the native binary", async (page, base) => {
  const statement = "SET SEED 7; SIMULATE N 100 P 0.3 EPS 0.1 RUNS 100000;";
  await page.goto(`${base}/#run=${encodeURIComponent(statement)}`);
  await waitForResults(page, 2, 120000);
  const status = await page.textContent("#status");
  const browser_ms = Number(status.match(/in (\d+) ms/)[1]);
  const binary = path.join(process.env.CARGO_TARGET_DIR ?? path.join(root, "target"), "release/dpq");
  let native_ms = null;
  if (fs.existsSync(binary)) {
    const { execFileSync } = await import("node:child_process");
    const t0 = process.hrtime.bigint();
    execFileSync(binary, ["--practice", "-c", statement], { stdio: "ignore" });
    native_ms = Number((process.hrtime.bigint() - t0) / 1000000n);
  }
  console.log(`  SIMULATE 100,000 runs: browser ${browser_ms} ms, native ${native_ms ?? "(no release build)"} ms`);
  return { simulate_browser_ms: browser_ms, simulate_native_ms: native_ms };
});

// --- issue 23: help, wrapped errors, charts under their statements, a first visit, comments --

// Waits for a run to end (the status line says how many results it gave) and reads them.
async function ran(page, timeout = 60000) {
  await page.waitForFunction(() => /results? in \d+ ms/.test(document.getElementById("status").textContent), null, { timeout });
  return results(page);
}

// Runs `script` in the page opened afresh, as typed into the editor.
async function runTyped(page, base, script) {
  await page.goto(base);
  await page.waitForSelector("body[data-ready=true]");
  await page.fill("#source", script);
  await page.click("#run");
  return ran(page);
}

// Every error says "type `help`": in the page, `help` lists the statements and `help COUNT`
// explains one, as at the prompt, in their place among the results; the statements around
// them run, and an error after a help names its line in the whole script.
test("help and help STATEMENT answer in the page", async (page, base) => {
  let out = await runTyped(page, base, "hlep;");
  assert.ok(out[0].error, out[0].text);
  assert.match(out[0].text, /type `help`/);
  out = await runTyped(page, base, "help");
  assert.equal(out.length, 1);
  assert.ok(!out[0].error, out[0].text);
  assert.match(out[0].text, /^Statements \(end each with ;\)/);
  assert.match(out[0].text, /\n  COUNT WHERE/);
  out = await runTyped(page, base, "LOAD 'examples/data/people.csv';\n-- what does COUNT do?\nhelp count;\nCOUNT WHERE age < 30 WITH EPS 0.1;\nHELP Histogram;\nhelp nothing");
  assert.equal(out.length, 5, JSON.stringify(out));
  assert.ok(out.every((r) => !r.error), JSON.stringify(out));
  assert.match(out[0].text, /Loaded table people/);
  assert.match(out[1].text, /^COUNT WHERE/);
  assert.match(out[1].text, /Example:/);
  assert.match(out[2].text, /noisy count/);
  assert.match(out[3].text, /^HISTOGRAM/);
  assert.match(out[4].text, /^No help for `nothing`\.\nStatements/);
  assert.deepEqual(await page.$$eval("#results pre.help", (ps) => ps.length), 3);
  // The statements after a help run on, and an error names its line in the script.
  out = await runTyped(page, base, "help;\nLOAD 'examples/data/people.csv';\nCOUNT WHERE agee < 30 WITH EPS 0.1;\nhelp;");
  assert.equal(out.length, 3, JSON.stringify(out));
  assert.ok(out[2].error);
  assert.match(out[2].text, /^page:3:13: unknown column `agee`/);
});

// A table accounts in zCDP in the page as at the prompt: Gaussian answers spend rho, shown as
// the (epsilon, delta) they amount to, and estimates and WITHIN use them.
test("a table accounts in rho in the page", async (page, base) => {
  const out = await runTyped(page, base, "LOAD 'examples/data/survey.csv';\nSET BUDGET RHO 0.5;\n" +
    "CUBE BY age (30, 65);\nHISTOGRAM WITH RHO 0.01;\nESTIMATE COUNT WHERE age < 65;\n" +
    "COUNT WHERE age >= 65 WITHIN 8 AT 95%;\nSHOW BUDGET;");
  assert.equal(out.length, 7, JSON.stringify(out));
  assert.ok(out.every((r) => !r.error), JSON.stringify(out));
  assert.match(out[3].text, /rho spent: 0\.01 for the whole vector/);
  // Two parts of sigma^2 = 2 / (2 x 0.01) = 100: variance 200, a normal error.
  assert.match(out[4].text, /variance\s+┆ 200\s/);
  assert.match(out[4].text, /normal \(Gaussian/);
  assert.match(out[5].text, /rho spent\s+┆ 0\.\d+ \(gaussian noise/);
  assert.match(out[6].text, /total rho/);
  assert.match(out[6].text, /\)-DP/);
});

// Errors wrap inside the results pane instead of running off its right edge: dpq's own (a
// name longer than the pane) and the page's (the long line Stop leaves).
test("a long error wraps in the results pane", async (page, base) => {
  const overflow = () => page.$$eval("#results pre.error", (ps) => ps.map((p) => ({
    text: p.textContent.slice(0, 60), scroll: p.scrollWidth, client: p.clientWidth,
    lines: Math.round(p.clientHeight / parseFloat(getComputedStyle(p).lineHeight)),
  })));
  const name = `a${"b".repeat(150)}`;
  const out = await runTyped(page, base, `LOAD 'examples/data/people.csv';\nCOUNT WHERE ${name} < 3 WITH EPS 0.1;`);
  assert.ok(out[1].error && out[1].text.includes(name), out[1].text);
  for (const e of await overflow()) assert.ok(e.scroll <= e.client, `${e.text}: ${e.scroll} pixels wide in a pane of ${e.client}`);
  await page.goto(`${base}/#run=${encodeURIComponent("SIMULATE N 100 P 0.3 EPS (0.1, 0.2, 0.3) RUNS 100000000;")}`);
  await page.waitForSelector("#stop:not([disabled])");
  await page.click("#stop");
  await page.waitForFunction(() => /^Stopped\./.test(document.querySelector("#results pre.error")?.textContent ?? ""));
  const [stopped] = await overflow();
  assert.ok(stopped.scroll <= stopped.client, `${stopped.text}: ${stopped.scroll} pixels wide in a pane of ${stopped.client}`);
  assert.ok(stopped.lines >= 2, `the long line wraps: ${JSON.stringify(stopped)}`);
});

// Each chart sits under the statement that drew it, before the next statement's result; the
// bars of a histogram and of a COUNT ... BY are named (issue 23, item 4, in the page).
test("each chart sits under the statement that drew it", async (page, base) => {
  await runTyped(page, base, "LOAD 'examples/data/census.csv' AS census;\n" +
    "CUBE BY age (18, 30, 45, 65, 80), region ('North', 'South', 'East', 'West', 'Centre');\n" +
    "HISTOGRAM WITH EPS 0.4 PLOT 'cells.svg';\nCOUNT BY region WITH EPS 0.2 PLOT 'regions.svg';\nSHOW BUDGET;");
  const order = await page.$$eval("#results > *", (es) => es.map((e) => e.tagName === "FIGURE" ? `chart ${e.querySelector("img").alt}` : e.textContent.split("\n")[0]));
  const at = (pattern) => order.findIndex((t) => pattern.test(t));
  const histogram = at(/^HISTOGRAM/), byRegion = at(/^COUNT BY region/);
  assert.ok(histogram >= 0 && byRegion > histogram, order.join(" | "));
  // SHOW BUDGET's table, after the second chart, last.
  assert.equal(order.length, byRegion + 3, order.join(" | "));
  assert.ok(!order[order.length - 1].startsWith("chart"), order.join(" | "));
  assert.equal(order[histogram + 1], "chart cells.svg", order.join(" | "));
  assert.equal(order[byRegion + 1], "chart regions.svg", order.join(" | "));
  assert.equal(order.filter((t) => t.startsWith("chart")).length, 2);
  const svg = async (alt) => {
    const src = await page.getAttribute(`#results figure img[alt='${alt}']`, "src");
    return decodeURIComponent(src.slice(src.indexOf(",") + 1));
  };
  // The bars' names: the right-aligned texts, top to bottom.
  const labels = (text) => [...text.matchAll(/<text [^>]*\by="([0-9.]+)"[^>]*text-anchor="end"[^>]*>\s*([^<]*?)\s*<\/text>/g)]
    .map((m) => [Number(m[1]), m[2].replace(/&apos;/g, "'").replace(/&lt;/g, "<")]).filter(([, l]) => l)
    .sort((a, b) => a[0] - b[0]).map(([, l]) => l);
  assert.deepEqual(labels(await svg("regions.svg")), ["region = 'North'", "region = 'South'", "region = 'East'", "region = 'West'", "region = 'Centre'", "region other", "region missing"]);
  const cells = labels(await svg("cells.svg"));
  assert.equal(cells.length, 49);
  assert.ok(cells.includes("18 <= age < 30, region = 'North'"), cells.join(" | "));
  await page.$eval("#results figure", (f) => f.scrollIntoView());
  await page.screenshot({ path: path.join(artifacts, "chart-under-its-statement.png") });
});

// A first visit, with nothing kept in the browser, opens the quickstart ready to run: in the
// editor at once, named in the list of examples, the status line saying how to run it. The
// user's script is then kept in the browser, and is back on the next visit.
test("a first visit opens the quickstart ready to run", async (page, base) => {
  await page.goto(base);
  await page.waitForSelector("body[data-ready=true]");
  assert.equal(await page.evaluate(() => localStorage.length), 0, "a first visit");
  const quickstart = fs.readFileSync(path.join(root, "examples/quickstart.dpq"), "utf8");
  assert.equal(await page.inputValue("#source"), quickstart);
  assert.equal(await page.inputValue("#example"), "quickstart");
  assert.match(await page.textContent("#status"), /quickstart is ready: press Run/);
  await page.click("#run");
  const out = await ran(page);
  assert.ok(out.length >= 4 && out.every((r) => !r.error), JSON.stringify(out));
  // Written by the user: kept, and back on the next visit instead of the quickstart.
  await page.fill("#source", "LOAD 'examples/data/people.csv';\nCOUNT WHERE age > 60 WITH EPS 0.2;\n");
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  assert.equal(await page.inputValue("#source"), "LOAD 'examples/data/people.csv';\nCOUNT WHERE age > 60 WITH EPS 0.2;\n");
  assert.match(await page.textContent("#status"), /from the last visit/);
  // A link's script runs without replacing the one kept.
  await page.goto(`${base}/#run=${encodeURIComponent("CHOOSE EPS WITHIN 20% AT 0.8 FOR 100;")}`);
  await waitForResults(page, 1);
  assert.equal(await page.evaluate(() => localStorage.getItem("dpq-playground-script")), "LOAD 'examples/data/people.csv';\nCOUNT WHERE age > 60 WITH EPS 0.2;\n");
});

// Examples speak to where they run: every example whose comments say how to run it at the
// command line (`cargo run`) says how to run it in the page too, before.
test("examples say how to run them in the page", async (page, base) => {
  await page.goto(base);
  await page.waitForSelector("body[data-ready=true]");
  const names = await page.$$eval("#example option", (os) => os.map((o) => o.value).filter((v) => v));
  let told = 0;
  await page.selectOption("#example", "");
  for (const name of names) {
    await page.fill("#source", "");
    await page.selectOption("#example", name);
    await page.waitForFunction(() => document.getElementById("source").value !== "");
    const comments = (await page.inputValue("#source")).split("\n").filter((l) => l.startsWith("--")).join("\n");
    if (!comments.includes("cargo run")) continue;
    told++;
    const page_at = comments.search(/playground[^\n]*\n?[^\n]*press Run/);
    assert.ok(page_at >= 0 && page_at < comments.indexOf("cargo run"), `${name}: ${comments.slice(0, 300)}`);
  }
  assert.ok(told >= 7, `${told} examples name cargo run`);
});

const server = await serve();
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let failed = 0;
const measured = {};
// DPQ_WEB_ONLY=words runs only the tests whose names hold those words.
const only = process.env.DPQ_WEB_ONLY;
const chosen = tests.filter((t) => !only || t.name.includes(only));
for (const { name, body } of chosen) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  try {
    Object.assign(measured, (await body(page, base)) ?? {});
    assert.deepEqual(errors, [], "no error in the page");
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}\n${e.stack ?? e}`);
  } finally {
    const file = name.replace(/[^a-z0-9]+/gi, "-").replace(/^-|-$/g, "").toLowerCase();
    await page.screenshot({ path: path.join(artifacts, `${file}.png`), fullPage: false });
    await page.close();
  }
}
await browser.close();
server.close();
if (!only) fs.writeFileSync(path.join(artifacts, "measured.json"), JSON.stringify(measured, null, 2) + "\n");
console.log(`${chosen.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
