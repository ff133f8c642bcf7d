// The console on a phone (390×844) and the words it shows: every section
// page and one of each detail page drawn without sideways scrolling, the
// navigation behind a menu button; times with their zone, the audit log in
// words, step options as durations, the whole answer of a saga's tryout,
// what an AttributesUpserted event set; a run whose queue no worker polls
// warned about, counts in the right plural, an unreachable server named
// so, a task's form shown before it is claimed and the way back to the
// inbox. Against the fixture of cmd/strand's TestConsoleInBrowser, with a
// few things of its own made through the API.

import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import {
  api,
  close,
  eventually,
  fixture,
  generous,
  launch,
  phone,
  runPath,
  screenshots,
  settle,
  text,
  withPage,
} from './helpers.mjs'

const ns = fixture.namespace
const timeout = generous(180_000)
const enc = encodeURIComponent

before(launch)
after(close)

function card(page, heading) {
  return page.locator('section.card').filter({ has: page.getByRole('heading', { level: 2, name: heading }) })
}

/** Waits until a task of the test worker's AskApproval titled title is in the inbox; its id. */
async function taskTitled(title) {
  return eventually(async () => {
    const { tasks } = await api('GET', `/namespaces/${ns}/tasks`)
    const t = (tasks ?? []).find((t) => t.title === title)
    assert.ok(t, `the task "${title}" is listed`)
    return t.task_id
  }, 20_000)
}

/** Made once, before the pages are visited: a schedule in its own zone, a mailbox, a task, a run nobody polls. */
let made

async function makeThings() {
  if (made) return made
  // A schedule in Berlin's time; its creation is audited with its target.
  await api('POST', `/namespaces/${ns}/schedules`, {
    schedule_id: 'phone-nightly',
    schedule: { spec: { cron: ['0 2 * * *'], time_zone: 'Europe/Berlin' }, action: { workflow_type: 'Nightly' } },
  })
  await api('POST', `/namespaces/${ns}/messages`, {
    name: 'parcel-left',
    correlation_key: 'flight-4711',
    payload: { n: 1 },
  })
  await api('POST', `/namespaces/${ns}/workflows`, {
    workflow_id: 'phone-ask',
    workflow_type: 'AskApproval',
    input: 'Approve the phone test',
  })
  // A run of a queue no worker polls: it has one event, and waits.
  const orphan = await api('POST', `/namespaces/${ns}/workflows`, {
    workflow_id: 'phone-orphan',
    workflow_type: 'Approval',
    queue: 'nobody-polls',
    input: 'x',
  })
  // A signal, audited in words.
  const signaled = await api('POST', `/namespaces/${ns}/workflows`, {
    workflow_id: 'phone-signaled',
    workflow_type: 'Approval',
    input: 'phone',
  })
  await api('POST', `/namespaces/${ns}/workflows/phone-signaled/signals`, { name: 'approve', input: 'ok' })
  const task = await taskTitled('Approve the phone test')
  made = {
    task,
    orphan: { workflow_id: 'phone-orphan', run_id: orphan.run_id },
    signaled: { workflow_id: 'phone-signaled', run_id: signaled.run_id },
  }
  return made
}

/** Every section page and one of each detail page. */
function pages(m) {
  const dags = fixture.dags
  const sm = fixture.statemachines
  const sagas = fixture.sagas
  const dagQ = `?namespace=${enc(dags.namespace)}`
  const smQ = `?namespace=${enc(sm.namespace)}`
  const smType = Object.keys(sm.definitions).sort()[0]
  const smInstance = sm.instances.granted
  return [
    ['overview', `/namespaces/${ns}/overview`],
    ['runs', `/namespaces/${ns}/runs`],
    ['schedules', `/namespaces/${ns}/schedules`],
    ['batches', `/namespaces/${ns}/batches`],
    ['tasks', `/namespaces/${ns}/tasks`],
    ['messages', `/namespaces/${ns}/messages`],
    ['queues', `/namespaces/${ns}/queues`],
    ['dags', `/dags${dagQ}`],
    ['statemachines', `/statemachines${smQ}`],
    ['sagas', `/namespaces/${enc(sagas.namespace)}/sagas`],
    ['namespaces', '/namespaces'],
    ['audit', '/audit'],
    ['cluster', '/cluster'],
    ['run', runPath(fixture.runs.waiting)],
    ['run-multistep', runPath(fixture.runs.multistep)],
    ['dag', `/dags/${enc(dags.definitions.success.name)}${dagQ}`],
    ['dag-instance', `/dag-instances/${enc(dags.namespace)}/${enc(dags.instances.success.workflow_id)}`],
    ['schedule', `/namespaces/${ns}/schedules/phone-nightly`],
    ['statemachine', `/statemachines/${enc(smType)}${smQ}`],
    ['statemachine-instance', `/statemachine-instances/${enc(sm.namespace)}/${enc(smInstance.id)}`],
    ['saga', `/namespaces/${enc(sagas.namespace)}/sagas/${enc(sagas.sagas.stuck.id)}`],
    ['mailbox', `/namespaces/${ns}/mailbox?name=parcel-left&key=flight-4711`],
    ['task', `/namespaces/${ns}/tasks/${enc(m.task)}`],
  ]
}

/** How far the page is wider than the screen (0: it does not scroll sideways), and what sticks out. */
function overflow(page) {
  return page.evaluate(() => {
    const over = document.documentElement.scrollWidth - window.innerWidth
    if (over <= 0) return { over: 0, culprits: [] }
    // The outermost elements whose right edge is past the screen (not
    // those inside a box that scrolls or clips: they do not widen the page).
    const past = (el) => el.getBoundingClientRect().right > window.innerWidth + 1
    const clipped = (el) => {
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement)
        if (getComputedStyle(p).overflowX !== 'visible') return true
      return false
    }
    const culprits = [...document.querySelectorAll('body *')]
      .filter((el) => past(el) && !clipped(el) && !(el.parentElement && past(el.parentElement)))
      .slice(0, 5)
      .map(
        (el) => `${el.tagName.toLowerCase()}.${[...el.classList].join('.')} "${(el.textContent ?? '').slice(0, 40)}"`,
      )
    return { over, culprits }
  })
}

/** The words of letters only in the page's tables that are drawn on two lines or more (broken mid-word). */
function brokenWords(page) {
  return page.evaluate(() => {
    const broken = []
    const walker = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT)
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!n.parentElement?.closest('table td') || n.parentElement.closest('.id')) continue
      for (const m of n.textContent.matchAll(/[A-Za-z]{3,}/g)) {
        const r = document.createRange()
        r.setStart(n, m.index)
        r.setEnd(n, m.index + m[0].length)
        const lines = new Set([...r.getClientRects()].filter((b) => b.width > 0).map((b) => Math.round(b.top)))
        if (lines.size > 1) broken.push(m[0])
      }
    }
    return broken.slice(0, 5)
  })
}

test('on a phone no page scrolls sideways, and the navigation opens from a menu button', { timeout }, async () => {
  const m = await makeThings()
  await withPage(
    `/namespaces/${ns}/overview`,
    async (page) => {
      const wide = []
      for (const [name, path] of pages(m)) {
        await page.goto(path)
        await page.locator('main h1').first().waitFor()
        await settle(page)
        const o = await overflow(page)
        await page.screenshot({ path: join(screenshots, `phone-${name}.png`), fullPage: true })
        if (o.over > 0) wide.push(`${name} (${path}) is ${o.over} px wider than the screen: ${o.culprits.join('; ')}`)
        const words = await brokenWords(page)
        if (words.length) wide.push(`${name} (${path}) breaks words in its tables: ${words.join(', ')}`)
      }
      assert.deepEqual(wide, [], 'pages that scroll sideways or break words on a phone')

      // The navigation is behind a menu button: closed, it takes no room.
      const menu = page.getByRole('button', { name: 'Menu' })
      assert.equal(await menu.getAttribute('aria-expanded'), 'false')
      const nav = page.getByRole('navigation', { name: 'Main' })
      assert.equal(await nav.getByRole('link', { name: 'Schedules' }).isVisible(), false)
      await menu.click()
      assert.equal(await menu.getAttribute('aria-expanded'), 'true')
      await page.screenshot({ path: join(screenshots, 'phone-menu.png') })
      await nav.getByRole('link', { name: 'Schedules' }).click()
      await page.getByRole('heading', { level: 1, name: 'Schedules' }).waitFor()
      // Going to a page closes the menu.
      assert.equal(await menu.getAttribute('aria-expanded'), 'false')
      assert.equal(await nav.getByRole('link', { name: 'Runs' }).isVisible(), false)
    },
    { size: phone },
  )
})

test('on a desktop no word in a table is broken either', { timeout }, async () => {
  const m = await makeThings()
  const sagas = fixture.sagas
  const paths = [
    `/namespaces/${ns}/overview`,
    `/namespaces/${ns}/runs`,
    `/namespaces/${ns}/queues`,
    `/namespaces/${enc(sagas.namespace)}/sagas/${enc(sagas.sagas.stuck.id)}`,
    '/audit',
    `/namespaces/${ns}/tasks/${enc(m.task)}`,
  ]
  await withPage(paths[0], async (page) => {
    const broken = []
    for (const path of paths) {
      await page.goto(path)
      await page.locator('main h1').first().waitFor()
      await settle(page)
      const words = await brokenWords(page)
      if (words.length) broken.push(`${path}: ${words.join(', ')}`)
    }
    assert.deepEqual(broken, [], 'words broken in tables')
  })
})

/** A run's history, from the API. */
async function history(run, namespace = ns) {
  const { events } = await api(
    'GET',
    `/namespaces/${enc(namespace)}/workflows/${enc(run.workflow_id)}/history?run_id=${enc(run.run_id)}&page_size=1000`,
  )
  return events
}

/** Opens the history event of index i (as the page lists them) and answers its text. */
async function openEvent(page, i) {
  const item = page.locator('ol.timeline > li').nth(i)
  await item.locator('summary').click()
  await item.locator('.event-details').waitFor()
  return item
}

test(
  'words, not raw values: zones, the audit log, step options, tryout answers, attributes set',
  { timeout },
  async () => {
    const m = await makeThings()
    await withPage(
      `/namespaces/${ns}/schedules/phone-nightly`,
      async (page) => {
        // A schedule's next fire is in its own zone, named: 02:00 in Berlin.
        const fire = card(page, 'Next fire times').locator('li').first()
        await fire.waitFor()
        assert.match(await text(fire), /^\d{4}-\d\d-\d\d 02:00:00 Europe\/Berlin \(in .+\)$/)
        // The list of schedules says so too.
        await page.goto(`/namespaces/${ns}/schedules`)
        const row = page.getByRole('row').filter({ hasText: 'phone-nightly' })
        assert.match(await text(row), / 02:00:00 Europe\/Berlin \(in /)

        // Every other time names its zone (the browser's, UTC here); the
        // overview's minutes say theirs.
        await page.goto(`/namespaces/${ns}/overview`)
        const minute = page.locator('table.minutes-table thead th').first()
        assert.equal((await minute.textContent()).trim(), 'Minute (UTC)')
        await page.goto(runPath(fixture.runs.multistep))
        const summary = card(page, 'Summary')
        await summary.waitFor()
        assert.match(await text(summary), /Started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC/)

        // A step's options: durations, not nanoseconds.
        const events = await history(fixture.runs.multistep)
        const i = events.findIndex((e) => e.step?.start_to_close)
        assert.ok(i >= 0, 'a step with a start-to-close timeout')
        const ev = await openEvent(page, i)
        const said = await text(ev)
        assert.match(said, /Start to close 20 s/)
        assert.doesNotMatch(said, /20000000000|start_to_close/)
        await ev.screenshot({ path: join(screenshots, 'phone-step-options.png') })

        // An AttributesUpserted event says what it set.
        const saga = fixture.sagas.sagas.completed
        const sagaRun = { workflow_id: saga.id, run_id: saga.run_id }
        const sagaEvents = await history(sagaRun, fixture.sagas.namespace)
        const u = sagaEvents.findIndex((e) => e.type === 'AttributesUpserted')
        assert.ok(u >= 0, 'the saga upserted attributes')
        const [key, value] = Object.entries(sagaEvents[u].attributes)[0]
        await page.goto(runPath(sagaRun, fixture.sagas.namespace))
        await card(page, 'History').waitFor()
        const up = await openEvent(page, u)
        assert.ok((await text(up.locator('.event-what'))).includes(`${key}=${value}`), 'the gist names what was set')
        // (The heading is set in capitals.)
        assert.ok(
          (await text(up.locator('.event-details')))
            .toLowerCase()
            .includes(`attributes set ${key} ${value}`.toLowerCase()),
        )

        // A tryout's answer is whole: JSON that parses, not cut inside a value.
        await page.goto(`/namespaces/${enc(fixture.sagas.namespace)}/sagas/${enc(saga.id)}`)
        const answers = page.locator('table.saga-tryouts .saga-answer code')
        await answers.first().waitFor()
        for (const a of await answers.allInnerTexts()) JSON.parse(a.replace(/\s+/g, ' '))

        // The audit log in words, with what each acted on.
        await page.goto('/audit')
        const audit = page.locator('main table.audit-table')
        await eventually(async () => {
          const all = await text(audit)
          assert.ok(all.includes('Signal run phone-signaled'), 'a signal, in words')
          assert.ok(all.includes('Create schedule phone-nightly'), 'a schedule made, with its id')
          assert.ok(all.includes('Send message parcel-left (key flight-4711)'), 'a message sent')
          assert.doesNotMatch(all, /\{workflow_id\}|\{namespace\}/, 'no route templates')
        }, 20_000)
        await page.screenshot({ path: join(screenshots, 'phone-audit-words.png'), fullPage: true })
        assert.ok(m.signaled)
      },
      { size: phone },
    )
  },
)

test(
  'a run nobody polls for is warned about; plurals; an unreachable server; a task’s form and the way back',
  { timeout },
  async () => {
    const m = await makeThings()
    await withPage(
      runPath(m.orphan),
      async (page) => {
        const warning = page.getByRole('status').filter({ hasText: 'No worker is polling queue' })
        await warning.waitFor()
        assert.match(await text(warning), /^No worker is polling queue nobody-polls; this run waits until one starts\./)
        assert.match(await text(card(page, 'History')), /History 1 event\b/)
        await page.screenshot({ path: join(screenshots, 'phone-run-no-worker.png'), fullPage: true })

        // A run of a queue a worker polls: no warning.
        await page.goto(runPath(fixture.runs.waiting))
        await card(page, 'Summary').waitFor()
        await settle(page)
        assert.equal(await page.getByText('No worker is polling').count(), 0)

        // The task: its form shown before it is claimed, disabled, with a
        // hint; a way back to the inbox.
        await page.goto(`/namespaces/${ns}/tasks/${enc(m.task)}`)
        const form = card(page, 'Complete')
        await form.getByLabel(/Budget/).waitFor()
        assert.ok(await form.getByLabel(/Budget/).isDisabled(), 'not the user’s to fill in yet')
        assert.match(await text(form), /Claim the task to fill in this form and complete it\./)
        assert.ok(await form.getByRole('button', { name: 'Complete: approve' }).isDisabled())
        await page.screenshot({ path: join(screenshots, 'phone-task-unclaimed.png'), fullPage: true })
        const back = page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Tasks' })
        assert.ok(await back.isVisible(), 'the way back is on the screen')
        await back.click()
        await page.getByRole('heading', { level: 1, name: 'Tasks' }).waitFor()

        // The server goes away: the page says so in words.
        await page.goto(runPath(m.orphan))
        await card(page, 'Summary').waitFor()
        await page.route('**/api/v1/**', (route) => route.abort('connectionrefused'))
        const down = page.getByRole('alert').filter({ hasText: 'cannot be reached' })
        await down.waitFor({ timeout: generous(20_000) })
        const said = await text(down)
        assert.match(said, /The server cannot be reached/)
        assert.doesNotMatch(said, /Failed to fetch/)
        await page.screenshot({ path: join(screenshots, 'phone-unreachable.png') })
        await page.unroute('**/api/v1/**')
      },
      { size: phone, expectedErrors: [/ERR_CONNECTION_REFUSED|ERR_FAILED/] },
    )
  },
)
