// A list kept live: the global feed, from the log's head, of the event types that change
// it; each burst of them refreshes the list once. The header's indicator follows the feed,
// so "live" is said only where something listens.

import { api, Feed } from "./api.js";
import { throttle } from "./dom.js";
import { setConnection } from "./status.js";

export async function followTypes(types, refresh) {
  const head = await api("/api/log/head");
  const again = throttle(() => refresh().catch(() => setConnection("reconnecting")), 250);
  return new Feed(`/api/events?type=${types.join(",")}`, { after: head.position, onEvent: again, onState: setConnection }).start();
}
