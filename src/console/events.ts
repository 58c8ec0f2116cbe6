import type { LocationQuery } from 'vue-router';
import { DeliveryFilter } from '../contract/requests';
import { EventKey, problemWith } from '../contract/schemas';
import type { DeliveryAttempt, DeliveryRecord, DeliveryStatus } from '../contract/types';
import { ApiError } from './api';

/** An event listing's filter as the address holds it: instants in ISO 8601, as the API takes them; `deliveries` '' for any. */
export interface EventQuery {
  eventKey: string;
  since: string;
  until: string;
  deliveries: DeliveryFilter | '';
}

/** The same filter as the form shows it: `datetime-local` values, in the browser's time zone. */
export interface EventForm {
  eventKey: string;
  since: string;
  until: string;
  deliveries: DeliveryFilter | '';
}

/** The choices of the Deliveries filter, as the form offers them. */
export const deliveryChoices: ReadonlyArray<{ value: DeliveryFilter | ''; label: string }> = [
  { value: '', label: 'All' },
  { value: 'failed', label: 'Failed' },
  { value: 'pending', label: 'Pending' },
  { value: 'delivered', label: 'Delivered' },
  { value: 'none', label: 'None' },
];

const text = (value: unknown) => (typeof value === 'string' ? value : '');
const deliveryFilterOf = (value: unknown): DeliveryFilter | '' => (DeliveryFilter.options as readonly unknown[]).includes(value) ? (value as DeliveryFilter) : '';

export function eventQueryOf(query: LocationQuery): EventQuery {
  return { eventKey: text(query.eventKey), since: text(query.since), until: text(query.until), deliveries: deliveryFilterOf(query.deliveries) };
}

/** `2026-01-31T13:05` in this browser's zone, for a `datetime-local` input; '' for none or an unreadable instant. */
export function localInput(iso: string): string {
  const time = Date.parse(iso);
  if (!iso || Number.isNaN(time)) return '';
  const date = new Date(time);
  return new Date(time - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

export function formOf(query: EventQuery): EventForm {
  return { eventKey: query.eventKey, since: localInput(query.since), until: localInput(query.until), deliveries: query.deliveries };
}

/**
 * The address's query for a filter from the form: a minute picked as "until"
 * includes the whole of that minute, since the API's bounds are inclusive.
 * Throws, naming the field, what the API would refuse.
 */
export function queryOf(form: EventForm): Record<string, string> {
  const query: Record<string, string> = {};
  const eventKey = form.eventKey.trim();
  if (eventKey) {
    const problem = problemWith(EventKey, eventKey);
    if (problem) throw new ApiError(`Event key ${problem}`, 'VALIDATION_ERROR', 400);
    query.eventKey = eventKey;
  }
  if (form.since) query.since = new Date(form.since).toISOString();
  if (form.until) query.until = new Date(new Date(form.until).getTime() + 59_999).toISOString();
  if (form.deliveries) query.deliveries = form.deliveries;
  if (query.since && query.until && query.since > query.until) throw new ApiError('Since must come before Until.', 'VALIDATION_ERROR', 400);
  return query;
}

export const statusLabel: Record<DeliveryStatus, string> = {
  PENDING: 'pending',
  SUCCEEDED: 'delivered',
  DEAD: 'dead letter',
  DISCARDED: 'discarded',
};

export const outcomeLabel: Record<DeliveryAttempt['outcome'], string> = {
  SUCCESS: 'succeeded',
  RETRY: 'failed, retried',
  FAILED: 'failed',
};

/** What the subscriber answered, in a few words: `HTTP 503 after 12 ms`. */
export function answerOf(attempt: DeliveryAttempt): string {
  const answered = attempt.httpStatus ? `HTTP ${attempt.httpStatus}` : 'no answer';
  return `${answered} after ${attempt.durationMs} ms`;
}

/** Where a delivery stands now, beside its attempts. */
export function standing(record: DeliveryRecord, format: (iso: string) => string): string {
  if (record.status === 'PENDING') {
    return record.nextAttemptAt ? `next attempt ${format(record.nextAttemptAt)}` : 'waiting for its first attempt';
  }
  return record.completedAt ? `${statusLabel[record.status]} ${format(record.completedAt)}` : statusLabel[record.status];
}

/** Date and time to the second, for the steps of a timeline. */
export const formatInstant = (iso: string) => new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/**
 * Date and time to the millisecond, only for a delivery's attempts: retries a
 * few hundred milliseconds apart must not look simultaneous.
 */
export const formatPreciseInstant = (iso: string) =>
  new Date(iso).toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    fractionalSecondDigits: 3,
  });
