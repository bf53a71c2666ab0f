// Every call to the API goes through here: the bearer token (when the server asks for one)
// rides on each request, the live feeds included. EventSource cannot send headers, so the
// feeds are read with fetch streaming and resumed with Last-Event-ID by hand.

const TOKEN_KEY = "controlroom.token";

export class Unauthorized extends Error {}

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || "http_error";
    this.field = error.field || null;
  }
}

// Kept for this tab only: closing the tab forgets it.
export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

const unauthorizedListeners = new Set();

export function onUnauthorized(listener) {
  unauthorizedListeners.add(listener);
}

function headers(extra = {}) {
  const all = { Accept: "application/json", ...extra };
  const t = token();
  if (t) all.Authorization = `Bearer ${t}`;
  return all;
}

function refused() {
  for (const listener of unauthorizedListeners) listener();
  return new Unauthorized("a valid bearer token is required");
}

export async function api(path, { method = "GET", body, signal } = {}) {
  const init = { method, headers: headers(), signal, cache: "no-store" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 401) throw refused();
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : null;
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

let openapiPaths = null; // one read of the document, shared by every caller

// Which operations this server offers (an action is shown only when it exists).
export async function offers(path, method) {
  if (openapiPaths === null) {
    openapiPaths = api("/openapi.json").then(
      (document) => document.paths || {},
      (error) => {
        openapiPaths = null;
        if (error instanceof Unauthorized) throw error;
        return {};
      },
    );
  }
  const paths = await openapiPaths;
  return Boolean(paths[path] && paths[path][method]);
}

// A live SSE feed. `onEvent(message)` gets each stored event (parsed `data`, with `id` the
// global position), `onPartial(data)` the transient model output. The feed resumes after
// the last id it delivered whenever the connection drops, so nothing is missed or repeated;
// it stops when `stop()` is called, or when `isDone()` says the stream has ended for good.
export class Feed {
  constructor(path, { after = null, onEvent, onPartial = () => {}, onState = () => {}, isDone = () => false }) {
    this.path = path;
    this.lastId = after === null ? null : String(after);
    this.onEvent = onEvent;
    this.onPartial = onPartial;
    this.onState = onState;
    this.isDone = isDone;
    this.retryMs = 2000;
    this.connections = 0;
    this.controller = null;
    this.stopped = false;
  }

  start() {
    this.loop();
    return this;
  }

  stop() {
    this.stopped = true;
    if (this.controller) this.controller.abort();
  }

  async loop() {
    while (!this.stopped) {
      try {
        await this.readOnce();
      } catch (error) {
        if (this.stopped) return;
        if (error instanceof Unauthorized) {
          this.onState("unauthorized");
          return;
        }
        if (error instanceof ApiError && error.status >= 400 && error.status < 500) {
          this.onState("failed", error);
          return; // asking again would get the same answer
        }
        this.onState("reconnecting", error);
      }
      if (this.stopped) return;
      if (this.isDone()) {
        this.onState("ended");
        return;
      }
      this.onState("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, this.retryMs));
    }
  }

  async readOnce() {
    this.controller = new AbortController();
    const extra = { Accept: "text/event-stream" };
    if (this.lastId !== null) extra["Last-Event-ID"] = this.lastId;
    const response = await fetch(this.path, { headers: headers(extra), signal: this.controller.signal, cache: "no-store" });
    if (response.status === 401) throw refused();
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      throw new ApiError(response.status, body);
    }
    this.connections += 1;
    this.onState("live");
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let pending = ""; // an incomplete last line, carried to the next chunk
    let message = { data: [], event: "message", id: null };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      let text = pending + decoder.decode(value, { stream: true });
      // A \r at a chunk's end may be half of \r\n: keep it for the next chunk.
      const held = text.endsWith("\r") ? "\r" : "";
      if (held) text = text.slice(0, -1);
      const lines = text.replace(/\r\n?/g, "\n").split("\n");
      pending = lines.pop() + held;
      for (const line of lines) {
        if (line === "") {
          if (message.data.length) this.dispatch(message);
          message = { data: [], event: "message", id: null };
          continue;
        }
        if (line.charCodeAt(0) === 58) continue; // ":" a comment (the opening, pings)
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.charCodeAt(0) === 32) value = value.slice(1);
        if (field === "data") message.data.push(value);
        else if (field === "event") message.event = value;
        else if (field === "id") message.id = value;
        else if (field === "retry" && /^\d+$/.test(value)) this.retryMs = Number(value);
      }
    }
  }

  dispatch(message) {
    const data = JSON.parse(message.data.join("\n"));
    if (message.event === "partial") {
      this.onPartial(data);
      return;
    }
    if (message.id !== null) this.lastId = message.id;
    this.onEvent({ id: Number(message.id), event: message.event, data });
  }
}
