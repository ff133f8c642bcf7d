// The saga pages in a real browser: the sagas list (states, filters, the
// batch form) and a saga's page (summary, a line per step with its forward
// run and compensation side by side, the tryouts, the timeline, the
// operator's actions and decisions), against the Trip sagas cmd/strand's
// TestConsoleInBrowser made with the CLI and the test worker
// (fixture.sagas; see console_browser_test.go).
//
// The tests run in order: those that only look come first; then those that
// change things (a failed compensation marked done, a refused decision, a
// batch that skips the last stuck saga's, a saga disabled, enabled and
// terminated).

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { api, audit, checkPage, close, eventually, fixture, launch, runPath, text, withPage, generous } from './helpers.mjs'

const { namespace: ns, sagas, type, queue, name } = fixture.sagas
const timeout = generous(120_000)

before(launch)
after(close)

function card(page, heading) {
  return page
    .locator('section.card')
    .filter({ has: page.getByRole('heading', { level: 2, name: heading, exact: true }) })
}

function sagaPath(id) {
  return `/namespaces/${encodeURIComponent(ns)}/sagas/${encodeURIComponent(id)}`
}

const listPath = `/namespaces/${encodeURIComponent(ns)}/sagas`

function apiSaga(id) {
  return api('GET', `/namespaces/${ns}/sagas/${encodeURIComponent(id)}`)
}

async function toTop(page) {
  await page.evaluate(() => window.scrollTo(0, 0))
}

/** The ids of the sagas the list shows, in its order. */
function listed(page) {
  return page.locator('table.sagas-table tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.saga))
}

/** Newest first: the order the fixture started them in, reversed. */
const all = ['stuck2', 'stuck', 'compensated', 'completed'].map((r) => sagas[r].id)

test('sagas page lists the sagas with their states, and filters them', { timeout }, async () => {
  await checkPage({
    name: 'sagas',
    path: listPath,
    async check(page) {
      assert.equal(await text(page.locator('main h1')), 'Sagas')
      await eventually(async () => assert.deepEqual(await listed(page), all))
      for (const s of Object.values(sagas)) {
        const row = page.locator(`table.sagas-table tr[data-saga="${s.id}"]`)
        assert.equal(await row.getAttribute('data-state'), s.state, `state of ${s.id}`)
        assert.equal(await row.locator('[data-state]').getAttribute('data-state'), s.state, `badge of ${s.id}`)
        const link = row.getByRole('link', { name: s.id, exact: true })
        assert.equal(await link.getAttribute('href'), sagaPath(s.id))
        const cells = (await row.locator('td').allInnerTexts()).map((c) => c.trim())
        assert.equal(cells[1], name)
        assert.equal(cells[4], type)
      }
      assert.equal(await text(page.locator(`tr[data-saga="${sagas.stuck.id}"] .badge`).first()), 'Compensation failed')

      const filters = page.getByRole('form', { name: 'Filter sagas' })
      // By state.
      await filters.getByLabel('State').selectOption('compensation_failed')
      await filters.getByRole('button', { name: 'Apply' }).click()
      await page.waitForURL(/state=compensation_failed/)
      await eventually(async () => assert.deepEqual(await listed(page), [sagas.stuck2.id, sagas.stuck.id]))
      assert.match(await text(card(page, 'Sagas that match').locator('.card-header')), /state compensation failed/)
      // By name: none match another name.
      await filters.getByLabel('State').selectOption('')
      await filters.getByLabel('Name').fill('cruise')
      await filters.getByRole('button', { name: 'Apply' }).click()
      await eventually(async () => assert.match(await text(card(page, 'Sagas that match')), /No sagas match/))
      // By name and start time: all of them started in the last hour.
      await filters.getByLabel('Name').fill(name)
      await filters.getByLabel('Started').selectOption('hour')
      await filters.getByRole('button', { name: 'Apply' }).click()
      await page.waitForURL(/since=hour/)
      await eventually(async () => assert.deepEqual(await listed(page), all))
      await filters.getByRole('button', { name: 'Clear' }).click()
      await eventually(async () => assert.equal(new URL(page.url()).search, ''))
      await eventually(async () => assert.deepEqual(await listed(page), all))
      // A row leads to its saga.
      await page.getByRole('link', { name: sagas.completed.id, exact: true }).click()
      await page.waitForURL(`**${sagaPath(sagas.completed.id)}`)
      await eventually(async () => assert.equal(await text(page.locator('main h1')), sagas.completed.id))
      await page.goBack()
      await eventually(async () => assert.deepEqual(await listed(page), all))
    },
  })
})

/** Checks a saga's page against the fixture: header, summary, steps, tryouts, timeline. */
async function checkSaga(page, s) {
  assert.equal(await text(page.locator('main h1')), s.id)
  const header = page.locator('.page-header')
  await eventually(async () => assert.equal(await header.locator('[data-state]').getAttribute('data-state'), s.state))
  const summary = card(page, 'Summary')
  const summaryText = await text(summary)
  // The transaction id is the saga's id (its idempotency keys' prefix), the
  // same however often the saga was sent.
  assert.ok(summaryText.includes(`Transaction ID ${s.id} `), `the transaction id in ${summaryText}`)
  assert.equal(
    await summary.getByRole('link', { name: s.run_id }).getAttribute('href'),
    runPath({ workflow_id: s.id, run_id: s.run_id }, ns),
  )
  // A line per step: forward and compensation side by side.
  const steps = page.locator('table.saga-steps tbody tr')
  assert.deepEqual(
    await steps.evaluateAll((rows) =>
      rows.map((r) => [r.dataset.step, Number(r.dataset.group), r.dataset.forward, r.dataset.compensation]),
    ),
    s.steps.map((st) => [st.name, st.group ?? 0, st.forward.state, st.compensation.state]),
  )
  for (const st of s.steps) {
    const row = page.locator(`table.saga-steps tr[data-step="${st.name}"]`)
    const cells = row.locator('td')
    const badges = await row.locator('.badge').evaluateAll((b) => b.map((e) => e.dataset.state))
    assert.deepEqual(badges, [st.forward.state, st.compensation.state], `the badges of ${st.name}`)
    const n = (a) => (a ? `${a} attempt${a === 1 ? '' : 's'}` : '')
    assert.equal(await text(cells.nth(2).locator('.muted')), n(st.forward.attempts), `forward attempts of ${st.name}`)
    assert.equal(await text(cells.nth(3).locator('.muted')), n(st.compensation.attempts), `undo attempts of ${st.name}`)
    assert.match(await text(cells.nth(1)), st.group ? new RegExp(`parallel ${st.group}`) : /alone/)
    for (const [phase, p] of [
      ['forward', st.forward],
      ['compensation', st.compensation],
    ]) {
      const err = row.locator(`.saga-error[data-phase="${phase}"]`)
      if (p.error) assert.ok((await text(err)).includes(p.error), `${phase} error of ${st.name}`)
      else assert.equal(await err.count(), 0, `no ${phase} error of ${st.name}`)
    }
  }
  // Every tryout, in the record's order.
  const tryouts = page.locator('table.saga-tryouts tbody tr')
  assert.deepEqual(
    await tryouts.evaluateAll((rows) =>
      rows.map((r) => [
        r.dataset.step,
        r.dataset.phase,
        Number(r.dataset.attempt),
        r.dataset.outcome,
        r.querySelector('[data-key]')?.getAttribute('data-key'),
      ]),
    ),
    s.tryouts.map((t) => [t.step, t.phase, t.attempt, t.outcome, t.idempotency_key]),
  )
  for (let i = 0; i < s.tryouts.length; i++) {
    const t = s.tryouts[i]
    if (t.error) assert.ok((await text(tryouts.nth(i))).includes(t.error), `the error of tryout ${i + 1}`)
  }
  await card(page, 'Timeline').getByRole('img').locator('canvas').first().waitFor()
}

test('a completed saga: its steps, the retried tryouts, the timeline', { timeout }, async () => {
  const s = sagas.completed
  await checkPage({
    name: 'saga-completed',
    path: sagaPath(s.id),
    prepare: toTop,
    async check(page) {
      await checkSaga(page, s)
      // The hotel was busy twice: two attempts failed and retried, the third succeeded.
      const hotel = page.locator('table.saga-tryouts tr[data-step="hotel"][data-phase="forward"]')
      assert.deepEqual(await hotel.evaluateAll((r) => r.map((e) => e.dataset.outcome)), [
        'retrying',
        'retrying',
        'succeeded',
      ])
      assert.match(await text(hotel.first()), /the booking service is busy/)
      assert.match(await text(hotel.first()), /Failed, retried/)
      // Its answer, whole (not cut inside a value), and on hover.
      const answer = hotel.last().locator('.saga-answer code')
      assert.match(JSON.parse(await text(answer)).ref, /^hotel-\d+$/)
      assert.match(await answer.getAttribute('title'), /"ref":"hotel-\d+"/)
      assert.match(await text(card(page, 'Operator actions')), /the saga has ended/)
      assert.equal(await card(page, 'Operator actions').getByRole('button').count(), 0, 'nothing to do')
      assert.match(await text(card(page, 'Operator decisions')), /No decisions/)
      assert.equal(await page.getByRole('button', { name: /refresh/ }).count(), 0, 'a closed saga does not refresh')
    },
  })
})

test('a compensated saga: what completed was undone in reverse', { timeout }, async () => {
  const s = sagas.compensated
  await withPage(sagaPath(s.id), async (page) => {
    await checkSaga(page, s)
    const undo = await page
      .locator('table.saga-tryouts tr[data-phase="compensation"]')
      .evaluateAll((r) => r.map((e) => e.dataset.step))
    assert.deepEqual(undo, ['hotel', 'flight'], 'the hotel undone before the flight')
    assert.match(await text(card(page, 'Summary')), /step car failed \(compensated\)/)
  })
})

test('a saga in compensation failed: the failed compensation waits for a decision', { timeout }, async () => {
  const s = sagas.stuck
  await checkPage({
    name: 'saga-compensation-failed',
    path: sagaPath(s.id),
    prepare: toTop,
    async check(page) {
      await checkSaga(page, s)
      const car = page.locator('table.saga-steps tr[data-step="car"]')
      assert.match(await text(car), /Compensation failed|Failed/)
      assert.match(await text(car), /waits for a decision/)
      const ops = card(page, 'Operator actions')
      assert.match(await text(ops), /waits for a decision on 1 failed compensation/)
      // Only the car's compensation failed: it alone has the decision's buttons.
      assert.deepEqual(
        await ops.locator('table.saga-decide tbody tr').evaluateAll((r) => r.map((e) => e.dataset.step)),
        ['car'],
      )
      for (const label of [
        'Retry the compensation of car',
        'Mark the compensation of car done',
        'Skip the compensation of car',
      ]) {
        assert.ok(await ops.getByRole('button', { name: label }).isEnabled(), label)
      }
      assert.ok(await ops.getByRole('button', { name: 'Disable' }).isEnabled())
      assert.ok(await ops.getByRole('button', { name: 'Terminate…' }).isEnabled())
    },
  })
})

test('Mark done on the failed compensation moves the saga on to compensated', { timeout }, async () => {
  const s = sagas.stuck
  await withPage(sagaPath(s.id), async (page) => {
    const ops = card(page, 'Operator actions')
    await ops.getByRole('button', { name: 'Mark the compensation of car done' }).waitFor()
    await ops.getByLabel('Note').fill('refunded by phone')
    await ops.getByRole('button', { name: 'Mark the compensation of car done' }).click()
    await eventually(async () => assert.match(await text(ops.getByRole('status')), /Mark done sent/))
    await eventually(async () => {
      const got = await apiSaga(s.id)
      assert.equal(got.state, 'compensated')
      const comp = Object.fromEntries(got.steps.map((st) => [st.name, st.compensation.state]))
      assert.deepEqual(comp, { flight: 'completed', hotel: 'completed', car: 'done', tickets: 'none' })
      assert.equal(got.operators.length, 1)
      assert.deepEqual(
        { action: got.operators[0].action, step: got.operators[0].step, note: got.operators[0].note },
        { action: 'done', step: 'car', note: 'refunded by phone' },
      )
    }, 30_000)
    // The page follows: compensated, the car done by hand, the flight undone, the decision listed.
    await eventually(async () =>
      assert.equal(await page.locator('.page-header [data-state]').getAttribute('data-state'), 'compensated'),
    )
    const car = page.locator('table.saga-steps tr[data-step="car"]')
    assert.equal(await car.getAttribute('data-compensation'), 'done')
    assert.match(await text(car), /Done by hand/)
    assert.equal(
      await page.locator('table.saga-steps tr[data-step="flight"]').getAttribute('data-compensation'),
      'completed',
    )
    const decision = card(page, 'Operator decisions').locator('tbody tr')
    assert.equal(await decision.count(), 1)
    const cells = (await decision.locator('td').allInnerTexts()).map((c) => c.trim())
    assert.deepEqual(cells.slice(1), ['Mark done', 'car', 'refunded by phone', 'strand-console'])
    assert.match(await text(card(page, 'Operator actions')), /the saga has ended/)
    await audit(page, 'saga-marked-done', { prepare: toTop })
  })
})

test('a decision the saga no longer waits for is refused in place', { timeout }, async () => {
  const s = sagas.stuck2
  const resolvePath = `/api/v1/namespaces/${ns}/sagas/${s.id}/resolve`
  // Through the API: an unknown action, a step whose compensation did not fail.
  for (const [body, status] of [
    [{ action: 'forget', step: 'car' }, 400],
    [{ action: 'skip', step: 'flight' }, 409],
  ]) {
    const res = await fetch(`${process.env.STRAND_URL}${resolvePath}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    })
    assert.equal(res.status, status, JSON.stringify(body))
  }
  assert.equal((await apiSaga(s.id)).state, 'compensation_failed', 'nothing changed')
  await withPage(
    sagaPath(s.id),
    async (page) => {
      const ops = card(page, 'Operator actions')
      const skip = ops.getByRole('button', { name: 'Skip the compensation of car' })
      await skip.waitFor()
      // The page stops reading the saga; someone else disables it meanwhile.
      await page.getByRole('button', { name: 'Pause refresh' }).click()
      await api('POST', `/namespaces/${ns}/sagas/${s.id}/disable`, { reason: 'looking into it', identity: 'ops' })
      await skip.click()
      await eventually(async () =>
        assert.match(
          await text(ops.getByRole('alert')),
          /failed_precondition .*is disabled.*only a failed compensation of a saga in compensation_failed/,
        ),
      )
      // The page read the saga again: disabled, nothing to decide until enabled.
      await eventually(async () =>
        assert.equal(await page.locator('.page-header [data-state]').getAttribute('data-state'), 'disabled'),
      )
      assert.equal(await ops.locator('table.saga-decide').count(), 0)
      assert.match(await text(card(page, 'Summary')), /Disabled.*by ops.*looking into it/)
      await audit(page, 'saga-refused', { prepare: toTop })
      await ops.getByRole('button', { name: 'Enable' }).click()
      await eventually(async () => assert.equal((await apiSaga(s.id)).state, 'compensation_failed'))
      await eventually(async () => assert.match(await text(ops.getByRole('status')), /Enabled/))
      assert.equal(await ops.getByRole('alert').count(), 0, 'the refusal is gone')
      await skip.waitFor()
      const got = await apiSaga(s.id)
      assert.equal(got.operators.length, 0, 'no decision reached the saga')
    },
    { expectedFailures: [{ method: 'POST', path: resolvePath, status: 409 }] },
  )
})

test('the batch form skips the failed compensations of the sagas in compensation failed', { timeout }, async () => {
  const s = sagas.stuck2
  const batches = `/api/v1/namespaces/${ns}/saga-batches`
  // A decision for completed sagas: refused in place.
  await withPage(
    `${listPath}?state=completed`,
    async (page) => {
      await eventually(async () => assert.deepEqual(await listed(page), [sagas.completed.id]))
      const form = card(page, 'Batch')
      await form.getByLabel('Action').selectOption('skip')
      await form.getByRole('button', { name: 'Skip the sagas' }).click()
      await eventually(async () =>
        assert.match(await text(form.getByRole('alert')), /invalid_argument .*only sagas in compensation_failed/),
      )
      await audit(page, 'sagas-batch-refused', { prepare: async (p) => card(p, 'Batch').scrollIntoViewIfNeeded() })
    },
    { expectedFailures: [{ method: 'POST', path: batches, status: 400 }] },
  )
  await withPage(`${listPath}?state=compensation_failed`, async (page) => {
    // Only stuck2 is left waiting (stuck was marked done above).
    await eventually(async () => assert.deepEqual(await listed(page), [s.id]))
    const form = card(page, 'Batch')
    assert.match(await text(form.locator('.card-header')), /state compensation failed/)
    await form.getByLabel('Action').selectOption('skip')
    await form.getByLabel('Note').fill('written off')
    await form.getByRole('button', { name: 'Skip the sagas' }).click()
    await eventually(async () => assert.match(await text(form.getByRole('status')), /See the batch/))
    await eventually(async () => {
      const got = await apiSaga(s.id)
      assert.equal(got.state, 'compensated')
      const car = got.steps.find((st) => st.name === 'car')
      assert.equal(car.compensation.state, 'skipped')
      assert.deepEqual(
        got.operators.map((o) => [o.action, o.step ?? '', o.note]),
        [['skip', '', 'written off']],
      )
    }, 30_000)
    await eventually(async () => assert.match(await text(form.getByRole('status')), /completed: 1 done: 1 succeeded/))
    // None waits any more.
    await eventually(async () => assert.match(await text(card(page, 'Sagas that match')), /No sagas match/))
    const link = form.getByRole('link', { name: 'See the batch' })
    assert.match(await link.getAttribute('href'), new RegExp(`^/namespaces/${ns}/batches/`))
    await audit(page, 'sagas-batch', { prepare: toTop })
  })
  await withPage(sagaPath(s.id), async (page) => {
    const car = page.locator('table.saga-steps tr[data-step="car"]')
    await eventually(async () => assert.equal(await car.getAttribute('data-compensation'), 'skipped'))
    assert.match(await text(card(page, 'Operator decisions')), /Skip every failed compensation written off/)
  })
})

test('a running saga is disabled, enabled and terminated from its page', { timeout }, async () => {
  const id = 'trip-busy'
  // The hotel stays busy: the saga retries it until its deadline, a minute away.
  await api('POST', `/namespaces/${ns}/workflows`, {
    workflow_id: id,
    workflow_type: type,
    queue,
    input: { busy: { hotel: 1000 } },
  })
  await withPage(sagaPath(id), async (page) => {
    const state = page.locator('.page-header [data-state]')
    await eventually(async () => assert.equal(await state.getAttribute('data-state'), 'in_progress'))
    const hotel = page.locator('table.saga-steps tr[data-step="hotel"]')
    await eventually(async () =>
      assert.match(await hotel.getAttribute('data-forward'), /^(retrying|running|scheduled)$/),
    )
    await eventually(async () =>
      assert.ok((await page.locator('table.saga-tryouts tr[data-step="hotel"][data-outcome="retrying"]').count()) >= 1),
    )
    assert.equal(await page.getByRole('button', { name: 'Pause refresh' }).count(), 1, 'a running saga refreshes')
    await audit(page, 'saga-in-progress', { prepare: toTop })
    const ops = card(page, 'Operator actions')
    assert.match(await text(ops), /nothing waits for a decision/)
    await ops.getByLabel('Reason').fill('the hotel is down')
    await ops.getByRole('button', { name: 'Disable' }).click()
    await eventually(async () => assert.equal((await apiSaga(id)).state, 'disabled'))
    await eventually(async () => assert.equal(await state.getAttribute('data-state'), 'disabled'))
    assert.match(await text(card(page, 'Summary')), /Disabled.*strand-console.*the hotel is down/)
    await ops.getByRole('button', { name: 'Enable' }).click()
    await eventually(async () => assert.equal((await apiSaga(id)).state, 'in_progress'))
    await eventually(async () => assert.equal(await state.getAttribute('data-state'), 'in_progress'))
    await ops.getByRole('button', { name: 'Terminate…' }).click()
    const dialog = page.getByRole('dialog', { name: `Terminate saga ${id}?` })
    assert.match(await text(dialog), /without compensating/)
    await audit(page, 'saga-terminate-dialog')
    await dialog.getByRole('button', { name: 'Terminate', exact: true }).click()
    await eventually(async () => {
      const got = await apiSaga(id)
      assert.equal(got.state, 'terminated')
      assert.equal(got.status, 'terminated')
    })
    await eventually(async () => assert.equal(await state.getAttribute('data-state'), 'terminated'))
    assert.match(await text(card(page, 'Operator actions')), /the saga has ended/)
    // The flight was not undone: terminate does not compensate.
    assert.equal(
      await page.locator('table.saga-steps tr[data-step="flight"]').getAttribute('data-compensation'),
      'none',
    )
  })
})

test('an answer stored as a document links to the run whose history loads it', { timeout }, async () => {
  const id = 'trip-bulky'
  // The tickets answer with a voucher of about 300 KB: a document.
  const { run_id } = await api('POST', `/namespaces/${ns}/workflows`, {
    workflow_id: id,
    workflow_type: type,
    queue,
    input: { bulky: 'tickets' },
  })
  await eventually(async () => assert.equal((await apiSaga(id)).state, 'completed'), 30_000)
  await withPage(sagaPath(id), async (page) => {
    const tickets = page.locator('table.saga-tryouts tr[data-step="tickets"][data-phase="forward"]')
    const link = tickets.locator('.saga-answer').getByRole('link')
    await link.waitFor()
    assert.match(await text(link), /^document, 3\d\d\.\d KiB$/)
    assert.equal(await link.getAttribute('href'), runPath({ workflow_id: id, run_id }, ns))
    // A small answer is still previewed in place.
    assert.match(
      await text(page.locator('table.saga-tryouts tr[data-step="flight"] .saga-answer code')),
      /^\{"step":"flight"/,
    )
    await link.click()
    await page.waitForURL((u) => u.pathname === runPath({ workflow_id: id, run_id }, ns))
  })
})
