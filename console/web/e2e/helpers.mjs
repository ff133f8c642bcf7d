// Helpers of the console's browser tests (console.test.mjs, dags.test.mjs): the browser,
// a page that records the browser's errors, and the audit every page gets
// in each theme (a full-page screenshot and axe-core).
//
// The browser is the system's Chromium driven by playwright-core: nothing
// here downloads a browser. The tests read their settings from the
// environment, which cmd/strand's TestConsoleInBrowser sets:
//
//   STRAND_URL          the strand server whose console is tested
//   STRAND_CHROMIUM     the browser (default /usr/bin/chromium-headless-shell)
//   STRAND_SCREENSHOTS  the folder screenshots go to (default e2e/screenshots-out)
//   STRAND_FIXTURE      a JSON file naming the runs the Go test made (fixture below)
//   STRAND_AXE          "report": print serious and critical axe violations, not fail

import { AxeBuilder } from '@axe-core/playwright'
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'

const here = dirname(fileURLToPath(import.meta.url))

/** The server under test, without a trailing slash. */
export const baseURL = required('STRAND_URL').replace(/\/+$/, '')

/** Where the screenshots go. */
export const screenshots = process.env.STRAND_SCREENSHOTS || join(here, 'screenshots-out')
mkdirSync(screenshots, { recursive: true })

/**
 * The runs the Go test made, as it wrote them:
 *
 *   {
 *     "namespace": "default",
 *     "runs": {
 *       "<role>": {"workflow_id", "run_id", "type", "status", "input", "result"?,
 *                  "reason"?, "signal"?, "steps": ["Shout"], "timers"?: n},
 *       ...  roles: completed, waiting (running, blocked on `signal`),
 *            terminated, multistep
 *     },
 *     "counts": {"completed": 2, "running": 1, "terminated": 1},  (runs by status)
 *     "namespaces": [{"name", "description", "retention": "10d"}],  (made besides default)
 *     "node": "console-test",  (the server's node id)
 *     "worker": "console-worker",  (the test worker's identity)
 *     "dags": {  (DAG pipelines, for dags.test.mjs)
 *       "namespace": "pipelines", "worker": "dag-worker",
 *       "definitions": {"<role>": {"name", "description", "params", "text", "versions", "online",
 *                                  "tasks": [{"name", "type", "upstream", "forbidden"}]}},
 *            roles: success, failure, slow
 *       "instances": {"<role>": {"workflow_id", "run_id", "dag", "version", "state", "status",
 *                                "tasks": {"<task>": "<state>"}, "outputs"?: {"<task>": {"<name>": "<value>"}},
 *                                "logs": {"<task>": "<a line of its log>"}, "attempts"?: {"<task>": n}}}
 *            roles: success, failure
 *     },
 *     "secure": {  (a second server, with access control, for access.test.mjs)
 *       "url": "http://127.0.0.1:PORT",
 *       "users": {"<role>": {"name", "password"}},  roles: admin (a cluster admin),
 *            namespace_admin, operator and reader (of the default namespace)
 *       "waiting": "secure-waiting"  (the workflow id of a run of default that stays open)
 *     }
 *   }
 */
export const fixture = JSON.parse(readFileSync(required('STRAND_FIXTURE'), 'utf8'))

function required(name) {
  const v = process.env[name]
  if (!v)
    throw new Error(`${name} is not set: run the browser tests with go test ./cmd/strand -run TestConsoleInBrowser`)
  return v
}

/** The flags without which the closed network here refuses Chromium's own connections. */
const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/** The viewport every page is drawn in. */
export const viewport = { width: 1366, height: 768 }

/** A phone's viewport (an iPhone 14's CSS pixels), for phone.test.mjs. */
export const phone = { width: 390, height: 844 }

/** The themes every page is audited in: the first is the one a page opens in. */
export const themes = ['light', 'dark']

/** Axe impacts that fail a test; lesser ones are printed only. */
const failingImpacts = new Set(['serious', 'critical'])

/** STRAND_AXE=report prints serious and critical violations instead of failing (for work on a page). */
const axeReportOnly = process.env.STRAND_AXE === 'report'

/**
 * A bound on a wait, from what a quiet machine needs: four times it. The
 * bounds are for events (a page drawn, a call answered), so a generous one
 * costs nothing when the event comes, and a loaded machine (make test
 * beside other work on two cores) must not fail a correct console.
 * STRAND_E2E_SLOWDOWN sets another factor.
 */
export function generous(ms) {
  return ms * (Number(process.env.STRAND_E2E_SLOWDOWN) || 4)
}

let browser

/** Starts the browser (once, in the file's before hook). */
export async function launch() {
  browser = await chromium.launch({
    executablePath: process.env.STRAND_CHROMIUM || '/usr/bin/chromium-headless-shell',
    headless: true,
    args: chromiumArgs,
  })
  return browser
}

/** Stops the browser (in the file's after hook). */
export async function close() {
  await browser?.close()
}

/** What a page's test found to fail it at its end: browser errors and axe violations. */
const findings = new WeakMap()

/**
 * Opens path of the console in a new browser context (the viewport, the
 * light theme, English, UTC), runs fn(page), and then fails if the browser
 * logged an error or the page threw (but for errors matching one of the
 * regular expressions of expectedErrors, and for the failed calls of
 * expectedFailures), or if an audit found serious or critical axe
 * violations: all of them, at once, at the end. The context is closed
 * either way.
 *
 * expectedFailures are the calls the test makes fail on purpose, each
 * {method, path, status}: path is the URL's path as the page requests it
 * (encoded, without the query). Chromium logs every response of an error
 * status as a console error ("Failed to load resource: the server
 * responded with a status of 409 (Conflict)", at the request's URL); that
 * error is not counted when the page made a declared call to that URL
 * and the server answered it with that status. A declared call that did
 * not fail so fails the test.
 *
 * base is the server whose console the page opens (default STRAND_URL);
 * size is the viewport's (default viewport; phone for a phone's screen).
 */
export async function withPage(
  path,
  fn,
  { expectedErrors = [], expectedFailures = [], base = baseURL, size = viewport } = {},
) {
  const context = await browser.newContext({
    baseURL: base,
    viewport: size,
    colorScheme: themes[0],
    locale: 'en-US',
    timezoneId: 'UTC',
    reducedMotion: 'reduce',
  })
  context.setDefaultTimeout(generous(15_000))
  const page = await context.newPage()
  watchTraffic(page)
  const found = { errors: [], axe: [] }
  findings.set(page, found)
  // The declared calls that failed so: as "path status" (what a console
  // error can be matched by), and by their index in expectedFailures.
  const failed = new Set()
  const seen = new Set()
  page.on('response', (r) => {
    const path = new URL(r.url()).pathname
    const i = expectedFailures.findIndex(
      (f) => f.method === r.request().method() && f.path === path && f.status === r.status(),
    )
    if (i < 0) return
    failed.add(`${path} ${r.status()}`)
    seen.add(i)
  })
  page.on('console', (m) => {
    if (m.type() !== 'error') return
    const { url } = m.location()
    const status = /^Failed to load resource: the server responded with a status of (\d+)/.exec(m.text())?.[1]
    found.errors.push({
      text: `console.error: ${m.text()} (${url || 'no location'})`,
      // A failed call, as the response event records a declared one.
      call: status && url ? `${new URL(url).pathname} ${status}` : undefined,
    })
  })
  page.on('pageerror', (e) => found.errors.push({ text: `page error: ${e.stack || e.message}` }))
  try {
    await page.goto(path)
    await page.locator('main h1').first().waitFor()
    await fn(page)
  } catch (e) {
    // What the browser said may explain the failure (a page that threw).
    if (found.errors.length && e instanceof Error) {
      e.message += `\nthe browser reported on ${path}:\n  ${found.errors.map((f) => f.text).join('\n  ')}`
    }
    throw e
  } finally {
    await context.close()
  }
  const errors = found.errors
    .filter((e) => !failed.has(e.call))
    .map((e) => e.text)
    .filter((e) => !expectedErrors.some((re) => re.test(e)))
  const failures = []
  if (errors.length) failures.push(`the browser reported errors on ${path}:\n  ${errors.join('\n  ')}`)
  const missing = expectedFailures.filter((_, i) => !seen.has(i))
  if (missing.length) {
    const calls = missing.map((f) => `${f.method} ${f.path} ${f.status}`).join(', ')
    failures.push(`the calls declared to fail on ${path} did not fail so: ${calls}`)
  }
  if (found.axe.length) {
    const text = `axe-core found serious or critical violations on ${path}:\n${found.axe.join('\n')}`
    if (axeReportOnly) console.log(`STRAND_AXE=report, not failing: ${text}`)
    else failures.push(text)
  }
  if (failures.length) throw new Error(failures.join('\n'))
}

/**
 * The page test most pages need: open path, run check(page), then audit
 * the page as name in each theme (prepare(page), if given, runs before
 * each audit, to open what the audit should see).
 */
export async function checkPage({ name, path, check, prepare }) {
  await withPage(path, async (page) => {
    await check(page)
    await audit(page, name, { prepare })
  })
}

/** The axe rules whose outcome depends on the theme's colours. */
const colourRules = ['color-contrast', 'link-in-text-block']

/**
 * Audits the page as it is now, in each theme: switches the theme with the
 * header's button, takes a full-page screenshot (NAME-THEME.png) and runs
 * axe-core (in the first theme every rule, in the others the colour rules). Violations of serious or critical impact fail the test at its
 * end (withPage), each rule listed with the selectors of its nodes; lesser
 * ones are printed. Leaves the page in the first theme.
 */
export async function audit(page, name, { prepare } = {}) {
  const found = findings.get(page)
  for (const theme of themes) {
    await setTheme(page, theme)
    if (prepare) await prepare(page)
    await settle(page)
    const file = join(screenshots, `${name}-${theme}.png`)
    await page.screenshot({ path: file, fullPage: true })
    console.log(`screenshot ${file}`)
    // The page's elements are the same in every theme, only its colours
    // differ: every rule runs in the first theme, the colour rules in the
    // others (axe is a good part of the browser tests' CPU).
    let axe = new AxeBuilder({ page })
    if (theme !== themes[0]) axe = axe.withRules(colourRules)
    const { violations } = await axe.analyze()
    for (const v of violations) {
      const text = describeViolation(v, `${name}, ${theme} theme`)
      if (failingImpacts.has(v.impact)) found.axe.push(text)
      else console.log(`axe (${v.impact}, not failing): ${text}`)
    }
  }
  await setTheme(page, themes[0])
}

/** One axe violation, readably: the rule, its impact and help, each node's selector and summary. */
function describeViolation(v, where) {
  const nodes = v.nodes.map((n) => {
    const summary = (n.failureSummary ?? '').replace(/\s*\n\s*/g, ' ').trim()
    return `    ${n.target.join(' ')}\n      ${summary}`
  })
  return `  [${v.impact}] ${v.id} on ${where}: ${v.help} (${v.helpUrl})\n${nodes.join('\n')}`
}

/**
 * Switches the console's theme with its button in the header, if it is not
 * the one asked for. While a modal dialog is open the button cannot be
 * reached: the theme is then set as the console's applyTheme sets it.
 */
export async function setTheme(page, theme) {
  const [current, modal] = await page.evaluate(() => [
    document.documentElement.dataset.theme,
    document.querySelector('dialog:modal') !== null,
  ])
  if (current !== theme) {
    if (modal) await page.evaluate((t) => (document.documentElement.dataset.theme = t), theme)
    else await page.getByRole('button', { name: `Switch to ${theme} theme` }).click()
  }
  await page.locator(`html[data-theme="${theme}"]`).waitFor({ state: 'attached' })
}

/** The page's requests not yet answered, and how many it has made: see quiet. */
const traffic = new WeakMap()

/** Counts page's requests as they start and end, for quiet. */
function watchTraffic(page) {
  const t = { pending: 0, made: 0 }
  traffic.set(page, t)
  page.on('request', () => {
    t.pending++
    t.made++
  })
  const done = () => t.pending--
  page.on('requestfinished', done)
  page.on('requestfailed', done)
}

/**
 * Waits until the page has loaded and made no request for ms, every one it
 * made answered: Playwright's networkidle with a shorter quiet window (it
 * waits 500 ms, four times per audit), since the page's calls to the
 * server are what it waits for and each is seen as it starts.
 */
async function quiet(page, ms = 200) {
  await page.waitForLoadState('load')
  const t = traffic.get(page)
  if (!t) return page.waitForLoadState('networkidle') // a page withPage did not open
  const deadline = Date.now() + generous(15_000)
  for (;;) {
    const made = t.made
    if (t.pending === 0) {
      await new Promise((r) => setTimeout(r, ms))
      if (t.pending === 0 && t.made === made) return
    } else {
      await new Promise((r) => setTimeout(r, 20))
    }
    if (Date.now() > deadline)
      throw new Error(`the page's calls did not end: ${t.pending} still waiting for an answer after ${generous(15_000)} ms`)
  }
}

/**
 * Waits for the page to be still: its calls answered, no "Loading…"
 * placeholder left in main (a lazy chunk, such as the Gantt chart's, can
 * start loading after the network went quiet), fonts and a frame drawn.
 */
export async function settle(page) {
  await quiet(page)
  await page
    .waitForFunction(() => {
      const leaves = [...document.querySelectorAll('main *')].filter((el) => el.children.length === 0)
      return !leaves.some((el) => /^Loading\b/.test(el.textContent?.trim() ?? ''))
    })
    .catch((e) => {
      throw new Error(`the page still shows a "Loading…" placeholder: ${e.message}`)
    })
  await quiet(page)
  await page.evaluate(() => document.fonts.ready)
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))))
}

/** A call to the server's API, for what the page should show (path under /api/v1). */
export async function api(method, path, body) {
  const res = await fetch(`${baseURL}/api/v1${path}`, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`)
  return text ? JSON.parse(text) : undefined
}

/** Retries an assertion until it holds or generous(ms) have passed, then throws its last failure. */
export async function eventually(fn, ms = 15_000) {
  const deadline = Date.now() + generous(ms)
  for (;;) {
    try {
      return await fn()
    } catch (e) {
      if (Date.now() > deadline) throw e
      await new Promise((r) => setTimeout(r, 250))
    }
  }
}

/** The text of a locator, with runs of white space made one space. */
export async function text(locator) {
  return (await locator.innerText()).replace(/\s+/g, ' ').trim()
}

/** The console's label of a status ("continued_as_new" → "Continued as new"), as StatusBadge draws it. */
export function statusLabel(status) {
  const s = status.replaceAll('_', ' ')
  return s.charAt(0).toUpperCase() + s.slice(1)
}

/** The path of a run's page. */
export function runPath(run, namespace = fixture.namespace) {
  return `/namespaces/${encodeURIComponent(namespace)}/runs/${encodeURIComponent(run.workflow_id)}/${encodeURIComponent(run.run_id)}`
}
