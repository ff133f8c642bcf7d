import { identity, path, request } from './client'

/** Who an alert group's alerts go to, and how (dag.AlertGroup). */
export interface AlertGroup {
  description?: string
  /** Strand users, emailed at their own address. */
  users?: string[]
  /** More addresses to email. */
  emails?: string[]
  /** Addresses copied on each email. */
  cc?: string[]
  /** The webhook each alert is posted to as JSON. */
  url?: string
  headers?: Record<string, string>
}

/** An alert group with its name, channels and last change (dag.AlertGroupInfo). */
export interface AlertGroupInfo extends AlertGroup {
  name: string
  channels: string[]
  modified_by?: string
  modified_at?: string
}

/** A failed task and its error. */
export interface FailedTask {
  name: string
  error: string
}

/** What an alert said (dag.Alert). */
export interface Alert {
  event: string
  dag: string
  version: number
  instance: string
  namespace?: string
  state?: string
  task?: string
  message?: string
  failed?: FailedTask[]
  business_date?: string
  time_zone?: string
  group: string
  time: string
}

/** What one channel answered an alert. */
export interface ChannelResult {
  channel: string
  to?: string[]
  delivered: boolean
  answer: string
}

/** An alert a group sent, and each channel's answer. */
export interface SentAlert {
  alert: Alert
  results: ChannelResult[]
}

/** An alert group and the last alerts it sent, newest first. */
export interface AlertGroupDetail extends AlertGroupInfo {
  recent: SentAlert[]
}

/** GET /alert-groups: every alert group. */
export function listAlertGroups(signal?: AbortSignal): Promise<{ groups: AlertGroupInfo[] }> {
  return request('GET', '/alert-groups', { signal })
}

/** GET /alert-groups/{name}: a group and its recent alerts. */
export function getAlertGroup(name: string, signal?: AbortSignal): Promise<AlertGroupDetail> {
  return request('GET', path`/alert-groups/${name}`, { signal })
}

/** PUT /alert-groups/{name}: creates or replaces a group (the whole group). */
export function setAlertGroup(name: string, g: AlertGroup): Promise<AlertGroupInfo> {
  return request('PUT', path`/alert-groups/${name}`, { body: { ...g, identity } })
}

/** DELETE /alert-groups/{name}. */
export function deleteAlertGroup(name: string): Promise<unknown> {
  return request('DELETE', path`/alert-groups/${name}`, { query: { identity } })
}

/** POST /alert-groups/{name}/test: a test alert through each channel. */
export function testAlertGroup(name: string): Promise<{ results: ChannelResult[] }> {
  return request('POST', path`/alert-groups/${name}/test`, { body: { identity } })
}
