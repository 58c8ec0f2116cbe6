import { activityItem, type ActivityItem, type ActivityLog, type NewActivity } from '../../events/activity.js';

/**
 * The activity log of the file backend: in memory, for this daemon alone (a
 * data directory has one daemon). Nothing is kept across a restart; ids start
 * at the start time in microseconds, so that they keep increasing across a
 * restart and a client's Last-Event-ID from before it is older than every item
 * of the new daemon, which gets it all.
 */
export class MemoryActivityLog implements ActivityLog {
  private nextId: number;
  private onItems: (items: ActivityItem[]) => void = () => undefined;

  constructor(now: () => number = Date.now) {
    this.nextId = now() * 1000;
  }

  async follow(onItems: (items: ActivityItem[]) => void): Promise<ActivityItem[]> {
    this.onItems = onItems;
    return [];
  }

  append(entry: NewActivity): void {
    this.onItems([activityItem(this.nextId++, entry)]);
  }

  /** Items reach the follower as they are appended. */
  async caughtUp(): Promise<void> {}
}
