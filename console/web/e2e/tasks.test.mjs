// The human tasks pages in a real browser: a task the test worker's
// AskApproval asked for (finance, a form with a required budget) in the
// inbox, claimed, refused by the form without a budget, and completed.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { api, audit, close, eventually, fixture, launch, text, withPage, generous } from './helpers.mjs'

const ns = fixture.namespace
const timeout = generous(90_000)

before(launch)
after(close)

function card(page, heading) {
  return page.locator('section.card').filter({ has: page.getByRole('heading', { level: 2, name: heading }) })
}

test('inbox: a task is claimed and completed with the form its JSON Schema draws', { timeout }, async () => {
  await api('POST', `/namespaces/${ns}/workflows`, {
    workflow_id: 'ask-console',
    workflow_type: 'AskApproval',
    input: 'Approve the console test',
  })
  await withPage(`/namespaces/${encodeURIComponent(ns)}/tasks`, async (page) => {
    const row = page.getByRole('row').filter({ hasText: 'Approve the console test' })
    await eventually(async () => assert.match(await text(row), /open .* group finance 2/), 20_000)
    await audit(page, 'tasks')

    await row.getByRole('link', { name: 'Approve the console test' }).click()
    await page.getByRole('heading', { level: 1, name: 'Approve the console test' }).waitFor()
    assert.match(await text(card(page, 'Task')), /A purchase waits for finance/)
    await page.getByRole('button', { name: 'Claim' }).click()
    await eventually(async () => assert.match(await text(card(page, 'Task')), /Status claimed/))

    // The form wants a budget: without one it says so and sends nothing.
    const form = card(page, 'Complete')
    await form.getByRole('button', { name: 'Complete: approve' }).click()
    await form
      .getByText(/required/i)
      .first()
      .waitFor()
    await audit(page, 'task-form')
    await form.getByLabel(/Budget/).fill('IT-2026')
    await form.getByRole('button', { name: 'Complete: approve' }).click()
    const outcome = card(page, 'Outcome')
    await outcome.waitFor()
    assert.match(await text(outcome), /Outcome approve/)
  })
  const result = await eventually(async () => {
    const r = await api('GET', `/namespaces/${ns}/workflows/ask-console/result`)
    assert.equal(r.status, 'completed')
    return r
  }, 20_000)
  assert.match(result.output, /^approve by .*, budget IT-2026$/)
})
