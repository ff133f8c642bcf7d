// The message pages in a real browser: the mailboxes of a namespace, a
// message sent with the console's dialog and kept, a run waiting for a
// message (the test worker's AwaitMessage) that the console's next send
// completes, the mailbox page of each, and the rules' dialogs.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { api, audit, close, eventually, fixture, launch, runPath, text, withPage, generous } from './helpers.mjs'

const ns = fixture.namespace
const timeout = generous(90_000)

before(launch)
after(close)

const messagesPath = `/namespaces/${encodeURIComponent(ns)}/messages`

function mailboxPath(name, key) {
  return `/namespaces/${encodeURIComponent(ns)}/mailbox?name=${encodeURIComponent(name)}&key=${encodeURIComponent(key)}`
}

function card(page, heading) {
  return page.locator('section.card').filter({ has: page.getByRole('heading', { level: 2, name: heading }) })
}

async function sendWithDialog(page, { name, key, payload }) {
  await page.getByRole('button', { name: 'Send message…' }).click()
  const dialog = page.getByRole('dialog', { name: 'Send a message' })
  await dialog.getByLabel('Message name').fill(name)
  await dialog.getByLabel('Correlation key').fill(key)
  await dialog.getByLabel('Payload (JSON)').fill(payload)
  await dialog.getByRole('button', { name: 'Send', exact: true }).click()
  await dialog.waitFor({ state: 'detached' })
  await page.getByRole('status').filter({ hasText: 'sent.' }).waitFor()
}

test('a message sent from the console is kept in its mailbox until a run waits', { timeout }, async () => {
  await withPage(messagesPath, async (page) => {
    await page.getByRole('heading', { level: 1, name: 'Messages' }).waitFor()
    await sendWithDialog(page, { name: 'invoice-paid', key: 'inv-1', payload: '{"amount": 5}' })

    // The list reads the mailbox's attributes, a second or so behind.
    const row = page.getByRole('row').filter({ hasText: 'inv-1' })
    await eventually(async () => {
      assert.match(await text(row), /invoice-paid inv-1 1 0/)
    }, 20_000)
    await audit(page, 'messages')

    await row.getByRole('link', { name: 'inv-1' }).click()
    await page.getByRole('heading', { level: 1, name: /Mailbox invoice-paid/ }).waitFor()
    const kept = card(page, /Kept messages \(1\)/)
    await kept.waitFor()
    assert.match(await text(kept), /"amount": 5/)
    assert.match(await text(card(page, /Runs waiting/)), /None/)
    await audit(page, 'mailbox-kept')
  })
})

test('a run waiting for a message: the mailbox shows it, and a send completes it', { timeout }, async () => {
  const started = await api('POST', `/namespaces/${ns}/workflows`, {
    workflow_id: 'await-inv-2',
    workflow_type: 'AwaitMessage',
    input: { name: 'invoice-paid', key: 'inv-2' },
  })
  await withPage(mailboxPath('invoice-paid', 'inv-2'), async (page) => {
    const waiting = card(page, /Runs waiting \(1\)/)
    await eventually(async () => assert.ok(await waiting.isVisible()), 20_000)
    const link = waiting.getByRole('link', { name: 'await-inv-2' })
    assert.equal(await link.getAttribute('href'), runPath({ workflow_id: 'await-inv-2', run_id: started.run_id }, ns))
    await audit(page, 'mailbox-waiting')

    await page.getByRole('link', { name: 'All mailboxes of invoice-paid' }).click()
    await page.getByRole('heading', { level: 1, name: 'Messages' }).waitFor()
    await sendWithDialog(page, { name: 'invoice-paid', key: 'inv-2', payload: '{"amount": 7}' })
  })
  const result = await eventually(async () => {
    const r = await api('GET', `/namespaces/${ns}/workflows/await-inv-2/result`)
    assert.equal(r.status, 'completed')
    return r
  }, 20_000)
  assert.deepEqual(result.output, { amount: 7 })
  await withPage(mailboxPath('invoice-paid', 'inv-2'), async (page) => {
    // Delivered: the mailbox closed, holding nothing.
    await eventually(
      async () => assert.match(await text(card(page, 'Mailbox')), /none: the mailbox holds nothing/),
      20_000,
    )
  })
})

test('rules: an admin adds one, a message starts its run, and the rule is deleted', { timeout }, async () => {
  await withPage(messagesPath, async (page) => {
    const rules = card(page, 'Rules')
    await rules.getByRole('button', { name: 'Add rule…' }).click()
    const dialog = page.getByRole('dialog', { name: 'Add a message rule' })
    await dialog.getByLabel('Message name').fill('payment-requested')
    await dialog.getByLabel('Workflow type').fill('AwaitMessage')
    await audit(page, 'message-rule-dialog')
    await dialog.getByRole('button', { name: 'Save rule' }).click()
    await dialog.waitFor({ state: 'detached' })
    await eventually(async () => assert.match(await text(rules), /payment-requested AwaitMessage default/))

    await rules.getByRole('button', { name: 'Delete' }).click()
    const confirm = page.getByRole('dialog', { name: 'Delete the rule of payment-requested?' })
    await confirm.getByRole('button', { name: 'Delete rule' }).click()
    await confirm.waitFor({ state: 'detached' })
    await eventually(async () => assert.match(await text(rules), /No rules/))
  })
})

test('the send dialog refuses a payload that is not JSON, and sends nothing', { timeout }, async () => {
  await withPage(messagesPath, async (page) => {
    await page.getByRole('button', { name: 'Send message…' }).click()
    const dialog = page.getByRole('dialog', { name: 'Send a message' })
    await dialog.getByLabel('Message name').fill('invoice-paid')
    await dialog.getByLabel('Correlation key').fill('inv-bad')
    await dialog.getByLabel('Payload (JSON)').fill('{amount')
    await dialog.getByRole('button', { name: 'Send', exact: true }).click()
    await dialog.getByText('The payload is not JSON.').waitFor()
    await dialog.getByRole('button', { name: 'Close' }).click()
  })
  const d = await api('GET', `/namespaces/${ns}/mailbox?name=invoice-paid&correlation_key=inv-bad`)
  assert.equal(d.kept.length, 0)
})
