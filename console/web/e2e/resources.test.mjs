// The resource centre's page in a real browser: a resource uploaded in two
// versions and a data source, listed with their owners, the data source's
// password never shown.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { api, audit, close, eventually, launch, text, withPage, generous } from './helpers.mjs'

const timeout = generous(60_000)

before(launch)
after(close)

test('resources: files with their latest version, data sources without their passwords', { timeout }, async () => {
  const b64 = (s) => Buffer.from(s).toString('base64')
  await api('POST', '/resources', { name: 'etl/load.sh', content: b64('echo one\n') })
  await api('POST', '/resources', { name: 'etl/load.sh', content: b64('echo two, longer\n') })
  // A sqlite data source stored without a check: the browser test's server
  // has no such file.
  await api('POST', '/datasources', {
    name: 'shop',
    type: 'sqlite',
    url: 'sqlite:/var/lib/etl/shop.db',
    description: 'the shop',
    skip_check: true,
  })
  await withPage('/resources', async (page) => {
    const files = page.getByRole('region', { name: 'Files' })
    const row = files.getByRole('row').filter({ hasText: 'etl/load.sh' })
    await eventually(async () => assert.match(await text(row), /etl\/load\.sh 2 17 bytes .* anonymous no one else/))
    const sources = page.getByRole('region', { name: 'Data sources' })
    const ds = sources.getByRole('row').filter({ hasText: 'shop' })
    assert.match(await text(ds), /shop sqlite sqlite:\/var\/lib\/etl\/shop\.db none anonymous/)
    await audit(page, 'resources')
  })
})
