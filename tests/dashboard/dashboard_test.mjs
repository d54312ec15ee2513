// The controller's /dashboard in headless chromium (run by run.sh, which brings the platform up
// and deploys the demo's functions). Fails (exit 1) on a console error, a failed request, a
// missing function row, a request-rate chart that does not change while `sluice load` runs, or
// an offline report that does not draw. Writes a full-page screenshot and the saved report.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import puppeteer from 'puppeteer-core';

function args() {
  const a = {};
  const v = process.argv.slice(2);
  for (let k = 0; k < v.length; k += 2) a[v[k].replace(/^--/, '')] = v[k + 1];
  return a;
}

const opt = args();
const X = '{"inputs":[{"name":"x","shape":[1,16],"datatype":"FP32","data":[0.5,-1,0.25,2,0,1,' +
  '-0.5,0.75,1.5,-2,0.1,0.2,-0.3,0.4,0.6,-0.7]}]}';
const errors = [];

function fail(message) {
  console.error('FAIL: ' + message);
  if (errors.length) console.error('browser errors:\n  ' + errors.join('\n  '));
  process.exit(1);
}

function watch(page, label) {
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`${label} console: ${m.text()}`); });
  page.on('pageerror', (e) => errors.push(`${label} page error: ${e.message}`));
  page.on('requestfailed', (r) => errors.push(`${label} request failed: ${r.url()} ` +
    `${r.failure() ? r.failure().errorText : ''}`));
}

// The classifier's request-rate series of the live chart: [max, sum, points].
function rpsSeries(page) {
  return page.evaluate(() => {
    const d = window.sluiceDashboard.chartData('chart-rps');
    const labels = window.sluiceDashboard.chartLabels('chart-rps');
    if (!d || !labels) return null;
    const k = labels.indexOf('classifier');
    if (k < 0) return null;
    const ys = d[k + 1].filter((y) => y !== null);
    return [Math.max(0, ...ys), ys.reduce((a, b) => a + b, 0), ys.length];
  });
}

function runLoad() {
  const child = spawn(opt.sluice, ['load', 'classifier', '--home', opt.home, '--trace', opt.trace,
    '--seconds', opt.seconds, '--data', X], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (b) => { out += b; });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out })));
}

const browser = await puppeteer.launch({
  executablePath: opt.chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1000 });
  watch(page, 'live');
  const response = await page.goto(opt.url + '/dashboard', { waitUntil: 'load' });
  if (!response || response.status() !== 200) fail('GET /dashboard: ' + (response && response.status()));
  await page.waitForFunction(() => ['classifier', 'trainer'].every(
    (f) => document.querySelector(`#functions tr[data-function="${f}"]`)), { timeout: 30000 })
    .catch(() => fail('the deployed functions are not listed'));
  await page.waitForFunction(() => window.sluiceDashboard.chartData('chart-rps') !== null,
    { timeout: 30000 }).catch(() => fail('the request-rate chart was not drawn'));
  const before = await rpsSeries(page);
  if (!before) fail('the request-rate chart has no classifier series');
  console.log(`before load: classifier rps max ${before[0].toFixed(1)} over ${before[2]} samples`);

  const load = runLoad();
  await page.waitForFunction(() => {
    const d = window.sluiceDashboard.chartData('chart-rps');
    const labels = window.sluiceDashboard.chartLabels('chart-rps');
    const k = labels ? labels.indexOf('classifier') : -1;
    return d && k >= 0 && d[k + 1].some((y) => y !== null && y > 5);
  }, { timeout: 60000 }).catch(() => fail('the request-rate chart did not change under load'));
  const during = await rpsSeries(page);
  console.log(`under load: classifier rps max ${during[0].toFixed(1)} over ${during[2]} samples`);
  if (during[1] <= before[1]) fail('the request-rate chart\'s data did not grow under load');
  const { code, out } = await load;
  if (code !== 0) fail('sluice load exited ' + code);
  process.stdout.write(out.split('\n').slice(0, 6).join('\n') + '\n');
  await new Promise((r) => setTimeout(r, 2500));  // the last load reports reach the charts
  const kinds = await page.$$eval('#events tbody tr', (rows) => rows.map((r) => r.dataset.kind));
  console.log('events seen: ' + [...new Set(kinds)].join(', '));
  if (!kinds.includes('placement')) fail('the event log shows no placement');
  const shares = await page.evaluate(() => window.sluiceDashboard.chartLabels('chart-share'));
  if (!shares || !shares.some((l) => l.startsWith('classifier#'))) {
    fail('the SM-share chart has no classifier instance: ' + JSON.stringify(shares));
  }
  await page.screenshot({ path: opt.screenshot, fullPage: true });
  console.log('screenshot: ' + opt.screenshot);
  if (errors.length) fail('console errors on the live dashboard');

  // The saved report opens offline: every request but the file itself is refused.
  const saved = await fetch(opt.url + '/dashboard/report');
  if (saved.status !== 200) fail('GET /dashboard/report: ' + saved.status);
  writeFileSync(opt.report, await saved.text());
  const offline = await browser.newPage();
  await offline.setViewport({ width: 1400, height: 1000 });
  watch(offline, 'report');
  await offline.setRequestInterception(true);
  const fetched = [];
  offline.on('request', (r) => {
    if (r.url().startsWith('file:') || r.url().startsWith('data:')) return r.continue();
    fetched.push(r.url());
    return r.abort();
  });
  await offline.goto(pathToFileURL(opt.report).href, { waitUntil: 'load' });
  const drawn = await offline.evaluate(() => {
    const d = window.sluiceDashboard.chartData('chart-rps');
    return d ? d[0].length : 0;
  });
  if (drawn < 5) fail(`the offline report drew ${drawn} samples`);
  if (fetched.length) fail('the offline report fetched ' + fetched.join(', '));
  if (errors.length) fail('console errors in the offline report');
  console.log(`report: ${opt.report} (${drawn} samples, opened offline)`);
} finally {
  await browser.close();
}
