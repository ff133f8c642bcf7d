// An alert group's pages in a real browser: the list of groups, one
// group's page (its recipients, channels and the test alert it sent, with
// each channel's answer), the form that creates a group (a bad address
// refused at its field, then a good one), and the group's page on a phone.
// Against the alert group cmd/strand's TestConsoleInBrowser made with the
// CLI (fixture.dags.alert_group).

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import {
  api,
  checkPage,
  close,
  eventually,
  fixture,
  generous,
  launch,
  phone,
  screenshots,
  text,
  withPage,
} from './helpers.mjs'
import { join } from 'node:path'

const group = fixture.dags.alert_group
const timeout = generous(90_000)

before(launch)
after(close)

test('the alert groups and one group: recipients, channels, recent alerts', { timeout }, async () => {
  await checkPage({
    name: 'alert-groups',
    path: '/alert-groups',
    async check(page) {
      assert.equal(await text(page.locator('main h1')), 'Alert groups')
      const row = page
        .locator('main tbody tr')
        .filter({ has: page.getByRole('link', { name: group.name, exact: true }) })
      const cells = (await row.locator('td').allInnerTexts()).map((c) => c.trim())
      assert.deepEqual(cells.slice(1, 4), ['email, webhook', group.emails.join(', '), group.cc.join(', ')])
    },
  })
  await checkPage({
    name: 'alert-group',
    path: `/alert-groups/${group.name}`,
    async check(page) {
      assert.equal(await text(page.locator('main h1')), group.name)
      const fact = (term) =>
        page
          .locator('dl.facts > div')
          .filter({ has: page.getByText(term, { exact: true }) })
          .locator('dd')
      assert.equal(await text(fact('Email addresses')), group.emails.join(', '))
      assert.equal(await text(fact('Cc')), group.cc.join(', '))
      assert.equal(await text(fact('Webhook')), group.webhook)
      // The test alert the CLI sent, delivered by both channels.
      const sent = page.locator('main tbody tr').first()
      await eventually(async () => assert.match(await text(sent), /test/))
      assert.match(await text(sent), /email: delivered/)
      assert.match(await text(sent), /webhook: delivered/)
    },
  })
})

test('a new alert group from the form: a bad address is refused at its field', { timeout }, async () => {
  await withPage(
    '/alert-groups',
    async (page) => {
      await page.getByRole('button', { name: 'New alert group…' }).click()
      const dialog = page.getByRole('dialog')
      await dialog.getByLabel('Name').fill('web-team')
      await dialog.getByLabel('Email addresses').fill('not-an-address')
      await dialog.getByRole('button', { name: 'Create alert group' }).click()
      const field = dialog.getByLabel('Email addresses')
      await eventually(async () => assert.equal(await field.getAttribute('aria-invalid'), 'true'))
      assert.match(await text(dialog), /"not-an-address" is not an email address/)
      await field.fill('web@example.com')
      await dialog.getByLabel('Cc').fill('lead@example.com')
      await dialog.getByRole('button', { name: 'Create alert group' }).click()
      await page.waitForURL('**/alert-groups/web-team')
      await eventually(async () => assert.equal(await text(page.locator('main h1')), 'web-team'))
      const g = await api('GET', '/alert-groups/web-team')
      assert.deepEqual([g.emails, g.cc, g.channels], [['web@example.com'], ['lead@example.com'], ['email']])
    },
    { expectedFailures: [{ method: 'PUT', path: '/api/v1/alert-groups/web-team', status: 400 }] },
  )
})

test('an alert group on a phone', { timeout }, async () => {
  await withPage(
    `/alert-groups/${group.name}`,
    async (page) => {
      await eventually(async () => assert.match(await text(page.locator('main tbody tr').first()), /test/))
      const [scroll, width] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth])
      assert.ok(scroll <= width, `no sideways scrolling: ${scroll} > ${width}`)
      await page.screenshot({ path: join(screenshots, 'alert-group-phone.png'), fullPage: true })
    },
    { size: phone },
  )
})
