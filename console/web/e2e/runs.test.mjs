// The runs list's filters, paging and counts in a real browser, on runs of
// a namespace of this file's own: Strand's own runs hidden unless asked,
// one count request per refresh, the page number in the address, the
// close-time and attribute filters, and attribute values shown as words.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { api, audit, close, eventually, launch, text, withPage, generous } from './helpers.mjs'

const ns = 'runs-e2e'
const timeout = generous(120_000)
const runsPath = `/namespaces/${ns}/runs`

before(async () => {
  await launch()
  await api('POST', '/namespaces', { name: ns, retention: 240 * 3600e9 })
  // 30 runs of Job no worker serves (they stay running), of teams red and
  // blue; the first three terminated, so closed.
  for (let i = 0; i < 30; i++) {
    const attributes = { team: i % 3 === 0 ? 'blue' : 'red' }
    if (i === 5) attributes.skus = '["pen","ink"]'
    await api('POST', `/namespaces/${ns}/workflows`, {
      workflow_id: `job-${String(i).padStart(2, '0')}`,
      workflow_type: 'Job',
      attributes,
    })
  }
  for (const id of ['job-00', 'job-01', 'job-02']) {
    await api('POST', `/namespaces/${ns}/workflows/${id}/terminate`, { reason: 'done with it' })
  }
  // A message to a mailbox: one of Strand's own runs (strand.Mailbox).
  await api('POST', `/namespaces/${ns}/messages`, { name: 'price-changed', correlation_key: 'sku-9' })
  await eventually(async () => {
    const { count } = await api('POST', `/namespaces/${ns}/workflow-count`, {})
    assert.equal(count, 31, 'the 30 jobs and the mailbox are listed')
  }, 30_000)
})
after(close)

/** The workflow ids the table lists. */
const ids = (page) => page.locator('tbody tr td:first-child a').allInnerTexts()

test('runs list: Strand’s own runs hidden by default, shown by the toggle; one count request a refresh', { timeout }, async () => {
  const counts = []
  const searches = []
  await withPage(runsPath, async (page) => {
    page.on('request', (r) => {
      const p = new URL(r.url()).pathname
      if (/\/workflow-(count|status-counts)$/.test(p)) counts.push(p)
      if (p.endsWith('/workflow-search')) searches.push(p)
    })
    await page.reload()
    await eventually(async () => assert.equal((await ids(page)).length, 30, 'the 30 jobs, no mailbox'))
    assert.ok(!(await ids(page)).some((id) => id.startsWith('strand-')), 'no run of Strand’s own')
    const all = page.getByRole('navigation', { name: 'Runs by status' }).getByRole('link', { name: /^All/ })
    await eventually(async () => assert.equal(await text(all.locator('.chip-count')), '30'))
    // The load and at least one refresh: one count request each.
    await eventually(async () => assert.ok(searches.length >= 2, `${searches.length} list requests`), 20_000)
    await eventually(async () => assert.ok(counts.length >= 2, `${counts.length} count requests`), 10_000)
    assert.ok(
      counts.length <= searches.length + 1,
      `${counts.length} count requests for ${searches.length} list requests: ${counts.join(', ')}`,
    )

    await page.getByRole('checkbox', { name: /Show Strand’s own runs|Show Strand's own runs/ }).check()
    await page.waitForURL(/system=true/)
    await eventually(async () => assert.ok((await ids(page)).includes('strand-message:price-changed:sku-9') ||
      (await ids(page)).some((id) => id.startsWith('strand-message:')), `the mailbox is listed: ${await ids(page)}`))
    await eventually(async () => assert.equal(await text(all.locator('.chip-count')), '31'))
    await audit(page, 'runs-system')
  })
})

test('runs list: the page number is in the address and survives a reload', { timeout }, async () => {
  await withPage(`${runsPath}?size=25`, async (page) => {
    await eventually(async () => assert.equal((await ids(page)).length, 25))
    const first = await ids(page)
    await page.getByRole('button', { name: 'Next →' }).click()
    await page.waitForURL(/page=2/)
    await eventually(async () => assert.equal((await ids(page)).length, 5))
    const second = await ids(page)
    assert.ok(!second.some((id) => first.includes(id)), 'page 2 has other runs')
    await page.reload()
    await eventually(async () => assert.deepEqual(await ids(page), second, 'the reloaded page 2'))
    assert.match(await text(page.getByRole('group', { name: 'Pages' })), /Page 2/)
    await page.getByRole('button', { name: '← Previous' }).click()
    await eventually(async () => assert.deepEqual(await ids(page), first, 'back on page 1'))
  })
})

test('runs list: sorted by start time, oldest first, across pages', { timeout }, async () => {
  await withPage(`${runsPath}?size=25`, async (page) => {
    await eventually(async () => assert.equal((await ids(page))[0], 'job-29', 'newest first by default'))
    await page.getByRole('form', { name: 'Filter runs' }).getByLabel('Order').selectOption('oldest')
    await page.waitForURL(/sort=oldest/)
    const jobs = Array.from({ length: 30 }, (_, i) => `job-${String(i).padStart(2, '0')}`)
    await eventually(async () => assert.deepEqual(await ids(page), jobs.slice(0, 25)))
    await page.getByRole('button', { name: 'Next →' }).click()
    await eventually(async () => assert.deepEqual(await ids(page), jobs.slice(25)))
  })
})

test('runs list: filters by close time and by attribute; attribute values read as words', { timeout }, async () => {
  await withPage(runsPath, async (page) => {
    const form = page.getByRole('form', { name: 'Filter runs' })
    // An hour ago, as the datetime-local input takes it (the page is in UTC).
    const hourAgo = new Date(Date.now() - 3600e3).toISOString().slice(0, 16)
    await form.getByLabel('Closed after').fill(hourAgo)
    await form.getByRole('button', { name: 'Apply' }).click()
    await page.waitForURL(/closedAfter=/)
    await eventually(async () => assert.deepEqual((await ids(page)).sort(), ['job-00', 'job-01', 'job-02']))

    await form.getByRole('button', { name: 'Clear' }).click()
    await form.getByLabel('Attribute').fill('team=blue')
    await form.getByRole('button', { name: 'Apply' }).click()
    await page.waitForURL(/attr=team/)
    const blue = Array.from({ length: 10 }, (_, i) => `job-${String(i * 3).padStart(2, '0')}`)
    await eventually(async () => assert.deepEqual((await ids(page)).sort(), blue))

    // job-05's skus attribute holds a JSON list: its items, as words.
    await page.goto(`${runsPath}?id=job-05`)
    const row = page.locator('tbody tr').filter({ hasText: 'job-05' })
    await eventually(async () => {
      const tags = await row.locator('.tag').allInnerTexts()
      assert.ok(tags.includes('skus=pen, ink'), `the tags: ${tags.join(' | ')}`)
    })
  })
})
