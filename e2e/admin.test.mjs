// Browser tests of Spool's admin page: the real server (the `admin_demo`
// example of spool-server: the embedded engine behind spool_server::run)
// driven through headless Debian Chromium with playwright-core.
//
// Run by e2e/run.sh, which installs what is missing and builds the server.
// Screenshots go to docs/screenshots/ (or $SCREENSHOT_DIR).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = process.env.ADMIN_DEMO_BIN || path.join(ROOT, 'target/debug/examples/admin_demo');
const SHOTS = process.env.SCREENSHOT_DIR || path.join(ROOT, 'docs/screenshots');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const TOKEN = 'e2e-secret-token-0123456789';
// A retry at the current time makes the task claimable at once.
const atOnce = () => new Date().toISOString();

const servers = [];
let browser;
let open; // the server without a token
let traffic; // the interval that keeps tasks flowing through "emails"

// ---------------------------------------------------------------- servers

async function startServer({ token, demoSchedules } = {}) {
  const data = mkdtempSync(path.join(tmpdir(), 'spool-e2e-'));
  const args = ['--data', data, '--listen', '127.0.0.1:0'];
  if (token) args.push('--token', token);
  if (demoSchedules) args.push('--demo-schedules');
  const child = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  const server = { child, data, token, log: () => log };
  servers.push(server);
  server.base = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no "listening on" line within 30 s\n${log}`)), 30_000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`admin_demo exited with ${code}\n${log}`));
    });
  });
  await waitHealthy(server.base);
  return server;
}

async function waitHealthy(base) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const res = await fetch(`${base}/healthz`);
      if (res.ok) return;
    } catch {
      // Not accepting yet.
    }
    if (Date.now() > deadline) throw new Error(`${base}/healthz never answered 200`);
    await sleep(100);
  }
}

async function stopServer(server) {
  if (server.child.exitCode === null) {
    server.child.kill('SIGTERM');
    const killer = setTimeout(() => server.child.kill('SIGKILL'), 10_000);
    await once(server.child, 'exit');
    clearTimeout(killer);
  }
  rmSync(server.data, { recursive: true, force: true });
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------- the API

async function api(server, method, route, body) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (server.token) headers.authorization = `Bearer ${server.token}`;
  const res = await fetch(server.base + route, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 400 && res.status !== 404) {
    throw new Error(`${method} ${route} answered ${res.status}: ${text}`);
  }
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

async function enqueue(server, queue, tasks) {
  const { json } = await api(server, 'POST', `/v1/queues/${queue}/tasks`, { tasks });
  return json.tasks.map((t) => t.id);
}

// Claims `id` (and gives back whatever else the claim took).
async function claim(server, queue, id, worker = 'worker-7') {
  const { json } = await api(server, 'POST', `/v1/queues/${queue}/claim`, { worker, max: 1000 });
  let mine;
  for (const t of json.tasks) {
    if (t.id === id) {
      mine = t;
    } else {
      await api(server, 'POST', `/v1/tasks/${t.id}/release`, { token: t.lease.token });
    }
  }
  assert.ok(mine, `task ${id} was not claimable`);
  return mine.lease.token;
}

// Fails task `id` once per message; the last failure discards it if asked.
async function failTimes(server, queue, id, messages, { discard = false } = {}) {
  let task;
  for (const [i, message] of messages.entries()) {
    const token = await claim(server, queue, id);
    const last = i === messages.length - 1;
    ({ json: task } = await api(server, 'POST', `/v1/tasks/${id}/fail`, {
      token,
      message,
      retry_at: atOnce(),
      discard: discard && last,
    }));
  }
  return task;
}

async function deadTask(server, queue, message) {
  const [id] = await enqueue(server, queue, [{ kind: 'refund', payload: { invoice: 7, reason: 'duplicate' } }]);
  const task = await failTimes(server, queue, id, [message], { discard: true });
  assert.equal(task.state, 'dead');
  return id;
}

// Enqueues a varying number of tasks and acks some every 400 ms, so the
// overview's rates and charts have something to show.
function startTraffic(server) {
  let tick = 0;
  return setInterval(async () => {
    tick += 1;
    try {
      const n = 3 + Math.round(4 * (1 + Math.sin(tick / 6)));
      const kinds = ['welcome', 'digest', 'receipt'];
      await enqueue(server, 'emails', Array.from({ length: n }, (_, i) => ({
        kind: kinds[(tick + i) % kinds.length],
        payload: { to: `user${tick}-${i}@example.com` },
      })));
      const { json } = await api(server, 'POST', '/v1/queues/emails/claim', { worker: 'mailer-1', max: 6 });
      if (json.tasks.length > 0) {
        await api(server, 'POST', '/v1/ack', { acks: json.tasks.map((t) => ({ id: t.id, token: t.lease.token })) });
      }
    } catch {
      // The server stopping at the end of the run; nothing to check here.
    }
  }, 400);
}

// ---------------------------------------------------------------- pages

async function newPage(options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, ...options });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  return page;
}

// The text of one state's cell in a queue's row of the overview.
function overviewCell(page, queue, state) {
  const column = { scheduled: 0, ready: 1, leased: 2, dead: 3 }[state];
  return page
    .locator('tr.queue', { has: page.locator('th a', { hasText: new RegExp(`^${queue}$`) }) })
    .locator('td')
    .nth(column);
}

async function shot(page, name, { fullPage = true } = {}) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });
}

// ---------------------------------------------------------------- setup

before(async () => {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  open = await startServer({ demoSchedules: true });
  traffic = startTraffic(open);

  // A queue of billing work in every state worth seeing.
  const [stuck, poison] = await enqueue(open, 'billing', [
    { kind: 'charge', payload: { invoice: 42, amount_cents: 1999, currency: 'EUR', customer: { id: 'cus_123', email: 'ada@example.com' } } },
    { kind: 'charge', payload: { invoice: 43, amount_cents: 500, currency: 'EUR' }, max_attempts: 3 },
  ]);
  await failTimes(open, 'billing', stuck, [
    'gateway timeout after 30 s',
    'gateway timeout after 30 s',
    'HTTP 502 from payments.example.com',
  ]);
  await failTimes(open, 'billing', poison, [
    'card declined: insufficient funds',
    'card declined: insufficient funds',
    'card declined: do not honor (code 05)',
  ]);
  await enqueue(open, 'billing', [
    { kind: 'refund', payload: { invoice: 7 } },
    { kind: 'refund', payload: { invoice: 8 }, delay_ms: 3_600_000 },
    { kind: 'charge', payload_base64: 'AAECAwQFBgcICQ==' },
  ]);
  // Flow control: limits on the queue, and customers' tasks in groups.
  await api(open, 'PUT', '/v1/queues/billing', {
    // Loose enough that the claims of the tests below are never held back.
    rate_limit: { limit: 1000, period_ms: 1000, burst: 1000 },
    max_leased: 100,
    group_concurrency: 4,
    group_rate_limit: { limit: 100, period_ms: 1000, burst: 10 },
  });
  await enqueue(open, 'billing', [
    ...Array.from({ length: 6 }, (_, i) => ({ kind: 'charge', group: 'customer:acme', payload: { invoice: 100 + i } })),
    ...Array.from({ length: 2 }, (_, i) => ({ kind: 'charge', group: 'customer:globex', payload: { invoice: 200 + i } })),
  ]);
  await enqueue(open, 'reports', [{ kind: 'build-report', payload: { report: 'weekly' } }]);
});

after(async () => {
  clearInterval(traffic);
  await browser?.close();
  await Promise.all(servers.map(stopServer));
});

// ---------------------------------------------------------------- tests

test('the overview shows every queue, and its counts follow an enqueue', async () => {
  const page = await newPage();
  await page.goto(`${open.base}/`);
  await assert.doesNotReject(page.getByRole('heading', { name: 'Queues', level: 1 }).waitFor());
  for (const queue of ['billing', 'emails', 'reports']) {
    await page.getByRole('link', { name: queue, exact: true }).waitFor();
  }
  const before = Number(await overviewCell(page, 'reports', 'ready').innerText());
  await enqueue(open, 'reports', [{}, {}, {}]);
  // The page refreshes itself: no reload here.
  await page.waitForFunction(
    ([want]) => {
      const row = [...document.querySelectorAll('tr.queue')].find((r) => r.querySelector('th a')?.textContent === 'reports');
      return row && row.querySelectorAll('td')[1].textContent === String(want);
    },
    [before + 3],
    { timeout: 20_000 },
  );
  assert.equal(await overviewCell(page, 'billing', 'dead').innerText(), '1');
  await page.context().close();
});

test('a task opens from its queue, with its payload and errors', async () => {
  const page = await newPage();
  await page.goto(`${open.base}/`);
  await page.getByRole('link', { name: 'billing', exact: true }).click();
  await page.waitForURL(/\/queues\/billing$/);
  await page.getByRole('heading', { name: 'billing' }).waitFor();
  // Most attempts first: the dead charge (3 attempts) and the stuck one.
  const firstAttempts = await page.locator('table.tasks tbody tr').first().locator('td.num').innerText();
  assert.equal(firstAttempts, '3 / 20');
  // Its limits, and its busiest groups first.
  await page.getByRole('heading', { name: 'Groups' }).waitFor();
  const busiest = page.locator('table.groups tbody tr').first();
  assert.equal(await busiest.locator('th').innerText(), 'customer:acme');
  assert.match(await busiest.locator('td').nth(1).innerText(), /of 4$/);
  assert.match(await busiest.locator('td').last().innerText(), /^\d+ of 10$/);
  assert.match(await page.locator('p.limits').innerText(), /Rate limit of each group: 100 per 1 s, in bursts of at most 10\./);
  await shot(page, 'queue');

  await page.locator('table.tasks tbody tr').nth(1).locator('th a').click();
  await page.waitForURL(/\/tasks\/\d+$/);
  await page.getByRole('heading', { name: /^Task \d+/ }).waitFor();
  const payload = await page.locator('pre.payload').innerText();
  assert.match(payload, /\n {2}"invoice": 4[23],\n/, payload);
  assert.match(await page.locator('ol.errors').innerText(), /card declined|gateway timeout/);
  await page.getByText('Retry task').waitFor();
  await shot(page, 'task');
  await page.context().close();
});

test('a dead task is retried, another deleted after confirming', async () => {
  const retried = await deadTask(open, 'billing', 'refund rejected by bank');
  const deleted = await deadTask(open, 'billing', 'refund for a closed account');
  const page = await newPage();

  await page.goto(`${open.base}/queues/billing?state=dead`);
  await page.locator(`a[href="/tasks/${retried}"]`).click();
  await page.getByRole('button', { name: 'Retry task' }).click();
  await page.getByText('Retried: the task is ready again').waitFor();
  assert.equal((await api(open, 'GET', `/v1/tasks/${retried}`)).json.state, 'ready');
  assert.equal((await api(open, 'GET', `/v1/tasks/${retried}`)).json.attempt, 0);

  await page.goto(`${open.base}/tasks/${deleted}`);
  const confirm = page.getByRole('button', { name: `Delete task ${deleted}` });
  assert.equal(await confirm.isVisible(), false, 'the delete button waits behind a confirmation');
  await page.getByText('Delete…').click();
  await confirm.click();
  await page.waitForURL(/\/queues\/billing\?state=dead/);
  await page.getByText('Deleted the task.').waitFor();
  assert.equal((await api(open, 'GET', `/v1/tasks/${deleted}`)).status, 404);
  await page.context().close();
});

test('a batch callback shows what it waits for and how they ended', async () => {
  // Three parts of an export, then the task that publishes it once every
  // part has ended, however it ended.
  const [one, two, , done] = await enqueue(open, 'exports', [
    { kind: 'export-part', payload: { month: '2026-11', part: 1 } },
    { kind: 'export-part', payload: { month: '2026-11', part: 2 } },
    { kind: 'export-part', payload: { month: '2026-11', part: 3 } },
    { kind: 'publish-export', payload: { month: '2026-11' }, after_batch: [0, 1, 2], if_parent_fails: 'run' },
  ]);
  const token = await claim(open, 'exports', one);
  // Keys in the order HTTP gives them back (docs/spec.md §3.2: normalized).
  const result = { file: 'exports/2026-11/part-1.csv', note: '<b>ok</b>', rows: 1204 };
  assert.equal((await api(open, 'POST', `/v1/tasks/${one}/ack`, { token, result })).status, 204);
  await failTimes(open, 'exports', two, ['upstream 503: report service unavailable'], { discard: true });

  const page = await newPage();
  await page.goto(`${open.base}/tasks/${done}`);
  await page.getByRole('heading', { name: 'Waits for' }).waitFor();
  const facts = await page.locator('section[aria-labelledby="deps-heading"] dl').innerText();
  assert.match(facts, /Waiting on\s+1 of 3 tasks/);
  assert.match(facts, /Completed\s+1/);
  assert.match(facts, /Failed\s+1/);
  assert.match(facts, /run it anyway/);
  // The completed part's result, next to it, as text (its markup escaped).
  const parents = page.locator('section[aria-labelledby="deps-heading"] ul.parents li');
  const first = parents.filter({ hasText: `Task ${one}` });
  assert.match(await first.innerText(), /result \{"file":"exports\/2026-11\/part-1\.csv","note":"<b>ok<\/b>","rows":1204\}/);
  assert.equal(await first.locator('b').count(), 0, 'a result is never markup');
  assert.doesNotMatch(await parents.filter({ hasText: `Task ${two}` }).innerText(), /result/);
  await shot(page, 'workflow');
  assert.equal((await api(open, 'GET', `/v1/tasks/${done}`)).json.state, 'pending');
  await page.context().close();
});

test('a queue is paused and resumed', async () => {
  const page = await newPage();
  await page.goto(`${open.base}/queues/reports`);
  await page.getByRole('button', { name: 'Pause queue' }).click();
  await page.getByText('Paused: workers get no tasks').waitFor();
  assert.equal((await api(open, 'GET', '/v1/queues/reports')).json.paused, true);
  const claimed = await api(open, 'POST', '/v1/queues/reports/claim', { worker: 'w' });
  assert.equal(claimed.json.tasks.length, 0, 'a paused queue hands out nothing');

  await page.getByRole('button', { name: 'Resume queue' }).click();
  await page.getByText('Resumed').waitFor();
  assert.equal((await api(open, 'GET', '/v1/queues/reports')).json.paused, false);
  await page.context().close();
});

test('schedules show their cadence and next fire', async () => {
  const page = await newPage();
  await page.goto(`${open.base}/`);
  await page.getByRole('link', { name: 'Schedules' }).click();
  await page.getByRole('heading', { name: 'Schedules', level: 1 }).waitFor();
  const table = await page.locator('table.data').innerText();
  assert.match(table, /nightly-report/);
  assert.match(table, /0 0 2 \* \* \*/);
  assert.match(table, /every 10 s/);
  await shot(page, 'schedules');
  await page.context().close();
});

test('with a token, the pages need a login', async () => {
  const secured = await startServer({ token: TOKEN });
  await enqueue(secured, 'emails', [{ kind: 'welcome', payload: { to: 'ada@example.com' } }]);
  const page = await newPage();

  await page.goto(`${secured.base}/queues/emails`);
  await page.waitForURL(/\/login\?next=%2Fqueues%2Femails$/);
  await page.getByLabel('Server token').waitFor();
  await shot(page, 'login', { fullPage: false });

  await page.getByLabel('Server token').fill('not-the-token');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('alert').filter({ hasText: 'That token is not right.' }).waitFor();

  await page.getByLabel('Server token').fill(TOKEN);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(/\/queues\/emails$/);
  await page.getByRole('heading', { name: 'emails' }).waitFor();
  const [cookie] = await page.context().cookies();
  assert.equal(cookie.name, 'spool_session');
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Strict');
  assert.ok(!cookie.value.includes(TOKEN), 'the cookie is not the token');

  // Actions work in the session (their forms carry its CSRF token).
  await page.getByRole('button', { name: 'Pause queue' }).click();
  await page.getByText('Paused: workers get no tasks').waitFor();
  assert.equal((await api(secured, 'GET', '/v1/queues/emails')).json.paused, true);

  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(/\/login$/);
  await page.goto(`${secured.base}/`);
  await page.waitForURL(/\/login$/);
  await page.context().close();
});

test('keyboard users can skip to the content', async () => {
  const page = await newPage();
  await page.goto(`${open.base}/`);
  await page.keyboard.press('Tab');
  const focused = await page.evaluate(() => document.activeElement?.textContent);
  assert.equal(focused, 'Skip to content');
  await page.context().close();
});

test('the overview charts fill in, on a laptop and on a phone', async () => {
  const page = await newPage();
  await page.goto(`${open.base}/`);
  // The sampler takes a sample every 5 s; the traffic has run since setup.
  await page.locator('figure.chart svg').first().waitFor({ timeout: 40_000 });
  await page.waitForFunction(
    () => document.querySelectorAll('figure.chart polyline.s-enqueued')[0]?.getAttribute('points')?.split(' ').length >= 4,
    null,
    { timeout: 40_000 },
  );
  const enqueued = await page.locator('.card', { hasText: 'Enqueued' }).locator('.card-value').innerText();
  assert.match(enqueued, /\/s$/);
  assert.notEqual(enqueued, '0/s');
  await shot(page, 'overview');
  await page.context().close();

  const phone = await newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  await phone.goto(`${open.base}/`);
  await phone.locator('figure.chart svg').first().waitFor();
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page itself does not scroll sideways (${overflow}px)`);
  await shot(phone, 'overview-phone');
  await phone.context().close();
});
