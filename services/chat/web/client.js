// The chat's browser client: an ES module, no build step, typed with JSDoc
// (and client.d.ts beside it). Served by the chat at /client.js (behind the
// platform's proxy, /chat/client.js):
//
//   import { ChatClient } from "https://example.com/chat/client.js";
//   const chat = new ChatClient({ base: "https://example.com/chat/", token });
//   const sub = chat.subscribe("general", { onEvent: (ev) => console.log(ev) });
//   await sub.send("hello");
//
// REST calls answer the server's JSON or throw a ChatError (the server's
// error body). A subscription keeps one channel's events coming over as
// many sockets as it takes: it reconnects with exponential backoff and
// jitter and resumes with since=<the last cursor seen>, so every event
// arrives once, in order, while the server still holds it (a hello with
// recovered:false says when it does not: reload the history). The protocol
// is documented at /docs and in the service README.

/**
 * @typedef {{id: string, name: string, role: string}} User
 * @typedef {{id: number, channel: string, user: User, text: string, created_at: string, bot: boolean, deleted?: boolean, deleted_at?: string}} Message
 * @typedef {{type: string, [field: string]: any}} ChatEvent
 *   One server object: hello, presence, message, message_deleted,
 *   user_timed_out, user_banned, shield_mode, ack, pong, error.
 * @typedef {"expiring" | "expired" | "refused"} RefreshReason
 * @typedef {(reason: RefreshReason) => (string | null | Promise<string | null>)} RefreshToken
 *   Called for a fresh token: "expiring" shortly before a platform token's
 *   exp (the answer renews the open socket with a refresh frame; null keeps
 *   the current one), "expired" after the server closed the socket at exp
 *   (4002), "refused" when reading needs a token and the server had none
 *   it took (4001). A token answered is used from then on (the socket
 *   reconnects with it); null after "expired" drops the token (the client
 *   reads on anonymously where the server allows it), after "refused" ends
 *   the subscription.
 * @typedef {{min?: number, max?: number}} Backoff milliseconds (default 500 and 30000)
 * @typedef {"connecting" | "live" | "reconnecting" | "stopped"} Status
 */

/** The server's error body, thrown by every call it refuses. */
export class ChatError extends Error {
  /**
   * @param {number} status
   * @param {any} body the error body ({statusCode, error, message, reason, ...}) or an error frame
   */
  constructor(status, body) {
    super((body && body.message) || "HTTP " + status);
    this.name = "ChatError";
    /** @type {number} */
    this.status = status;
    /** @type {string} the error's title ("Bad Request"), or an error frame's code */
    this.error = (body && (body.error || body.code)) || "";
    /** @type {string | undefined} */
    this.reason = body && body.reason;
    /** @type {number | undefined} seconds to wait (429, 503) */
    this.retryAfter = body && body.retry_after_seconds;
    /** @type {string | null | undefined} */
    this.until = body && body.until;
    /** @type {{field: string, message: string}[] | undefined} */
    this.details = body && body.details;
    this.body = body;
  }
}

/**
 * The wait before reconnection number attempt (0 first): a random time
 * between half and all of min·2^attempt, at most max. The jitter spreads
 * the clients a restart dropped together.
 * @param {number} attempt
 * @param {Backoff} [b]
 * @returns {number} milliseconds
 */
export function backoffDelay(attempt, b = {}) {
  const min = b.min || 500;
  const max = Math.max(b.max || 30000, min);
  const d = Math.min(min * 2 ** Math.min(attempt, 30), max);
  return Math.round(d / 2 + (Math.random() * d) / 2);
}

/**
 * Tells a platform token (a JWT: three base64url parts) from a chat token.
 * @param {string | null | undefined} t
 */
export function isJWT(t) {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(t || "");
}

/**
 * A JWT's exp in milliseconds, unverified (the server checks it; the
 * client only needs to know when to renew), or 0.
 * @param {string} t
 */
export function tokenExpiry(t) {
  if (!isJWT(t)) return 0;
  try {
    const b64 = t.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const exp = JSON.parse(atob(b64 + "===".slice((b64.length + 3) % 4))).exp;
    return typeof exp === "number" && exp > 0 ? exp * 1000 : 0;
  } catch (e) {
    return 0;
  }
}

/**
 * The message id a cursor stands after ("42-1.9f2c01a4" is 42), 0 if none.
 * @param {string | number | null | undefined} cursor
 */
export function messageId(cursor) {
  return parseInt(String(cursor ?? "").split(/[-.]/)[0], 10) || 0;
}

/** A new random Idempotency-Key. */
export function newIdempotencyKey() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

export class ChatClient {
  /**
   * @param {{base?: string | URL, token?: string, refreshToken?: RefreshToken}} [opts]
   *   base: where the chat is served (default: the directory of the page,
   *   which suits a page the chat serves itself); token: a chat token or a
   *   platform JWT; refreshToken: see RefreshToken.
   */
  constructor(opts = {}) {
    /** @type {URL} */
    this.base = new URL(opts.base ?? ".", document.baseURI);
    if (!this.base.pathname.endsWith("/")) this.base.pathname += "/";
    /** @type {string} */
    this.token = opts.token || "";
    /** @type {RefreshToken | null} */
    this.refreshToken = opts.refreshToken || null;
  }

  /**
   * Replaces the token; open subscriptions renew theirs with it (a refresh
   * frame for a platform token that replaces one, else an auth frame).
   * @param {string} token
   */
  setToken(token) {
    const prev = this.token;
    this.token = token || "";
    for (const s of Subscription.open) if (s.client === this) s.tokenChanged(prev);
  }

  /**
   * Calls the REST API: path is under the base ("api/v1/users/me"). Answers
   * the JSON body (null when empty) or throws a ChatError.
   * @param {string} method
   * @param {string} path
   * @param {{query?: Record<string, string | number | undefined>, body?: any, headers?: Record<string, string>}} [opts]
   * @returns {Promise<any>}
   */
  async request(method, path, opts = {}) {
    const u = new URL(path, this.base);
    for (const [k, v] of Object.entries(opts.query || {})) if (v !== undefined && v !== "") u.searchParams.set(k, String(v));
    /** @type {Record<string, string>} */
    const headers = { Accept: "application/json", ...(opts.headers || {}) };
    if (this.token) headers.Authorization = "Bearer " + this.token;
    /** @type {RequestInit} */
    const init = { method, headers };
    if (opts.body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(opts.body);
    }
    const res = await fetch(u, init);
    const text = await res.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (e) {
      data = null;
    }
    if (!res.ok) throw new ChatError(res.status, data || { message: String(res.status) });
    return data;
  }

  /**
   * Sends a message over REST: the stored message (with reply), or
   * {held} when held for review. Pass an idempotencyKey to retry safely.
   * @param {string} channel
   * @param {string} text
   * @param {{idempotencyKey?: string}} [opts]
   */
  send(channel, text, opts = {}) {
    const headers = opts.idempotencyKey ? { "Idempotency-Key": opts.idempotencyKey } : undefined;
    return this.request("POST", "api/v1/messages/send", { body: { channel, message: text }, headers });
  }

  /**
   * A page of a channel's history, oldest first.
   * @param {string} channel
   * @param {{limit?: number, before?: number, after?: number}} [page]
   * @returns {Promise<{channel: string, messages: Message[]}>}
   */
  messages(channel, page = {}) {
    return this.request("GET", "api/v1/messages", { query: { channel, limit: page.limit, before: page.before, after: page.after } });
  }

  /**
   * The signed-in user, with its standing in channel when named.
   * @param {string} [channel]
   */
  me(channel) {
    return this.request("GET", "api/v1/users/me", { query: { channel } });
  }

  /**
   * Reads a channel until close().
   * @param {string} channel
   * @param {{since?: string, onEvent?: (ev: ChatEvent) => void, onStatus?: (status: Status, detail?: {wait?: number, code?: number, reason?: string}) => void, backoff?: Backoff}} [opts]
   */
  subscribe(channel, opts = {}) {
    return new Subscription(this, channel, opts);
  }
}

// Close codes after which reconnecting cannot help: unauthorized (4001,
// unless refreshToken answers a token), user deleted (4003), too many
// sockets (4029), a frame the server refused (1003, 1008, 1009).
const final = new Set([4003, 4029, 1003, 1008, 1009]);

export class Subscription {
  /** @type {Set<Subscription>} */
  static open = new Set();

  /**
   * @param {ChatClient} client
   * @param {string} channel
   * @param {{since?: string, onEvent?: (ev: ChatEvent) => void, onStatus?: (status: Status, detail?: {wait?: number, code?: number, reason?: string}) => void, backoff?: Backoff}} opts
   */
  constructor(client, channel, opts) {
    this.client = client;
    this.channel = channel;
    /** @type {string | null} the last cursor seen: the next socket resumes after it */
    this.cursor = opts.since || null;
    this.onEvent = opts.onEvent || (() => {});
    this.onStatus = opts.onStatus || (() => {});
    this.backoff = opts.backoff || {};
    /** @type {WebSocket | null} */
    this.ws = null;
    /** true once the open socket's hello came */
    this.live = false;
    this.attempt = 0;
    this.reqId = 0;
    /** @type {Map<number, {resolve: (ev: ChatEvent) => void, reject: (e: Error) => void}>} */
    this.pending = new Map();
    this.offerToken = true;
    this.closed = false;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.timer = undefined;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.renewTimer = undefined;
    Subscription.open.add(this);
    this.connect();
  }

  /** The subscription URL, with since when there is a cursor. */
  url() {
    const u = new URL("api/v1/ws", this.client.base);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    u.searchParams.set("channel", this.channel);
    if (this.cursor !== null) u.searchParams.set("since", this.cursor);
    return u.toString();
  }

  // The token goes in the handshake as a subprotocol (a browser cannot set
  // an Authorization header on a WebSocket), so the server counts the
  // socket as its user's from the start. After a handshake that offered it
  // and failed (an unknown token answers 401, which a page cannot read),
  // the next one goes without, and the auth frame's error says what is wrong.
  protocols() {
    const t = this.client.token;
    if (!t || !this.offerToken || !/^[A-Za-z0-9._~+-]+$/.test(t)) return undefined;
    return ["chat", "bearer." + t];
  }

  connect() {
    clearTimeout(this.timer);
    if (this.closed) return;
    const offered = this.protocols();
    const ws = new WebSocket(this.url(), offered);
    let opened = false;
    this.ws = ws;
    this.live = false;
    this.onStatus("connecting");
    ws.onopen = () => {
      opened = true;
      // Without the token in the handshake, an auth frame signs in (and,
      // where reading needs a token, lets the hello come).
      if (this.client.token && !offered) this.authFrame("auth", this.client.token);
    };
    ws.onmessage = (e) => {
      if (ws !== this.ws) return;
      for (const line of String(e.data).split("\n")) {
        if (line.trim() === "") continue;
        let ev;
        try {
          ev = JSON.parse(line);
        } catch (err) {
          console.error("chat: bad frame", line, err);
          continue;
        }
        this.dispatch(ev);
      }
    };
    ws.onclose = (e) => {
      if (ws !== this.ws) return;
      this.ws = null;
      this.live = false;
      clearTimeout(this.renewTimer);
      for (const p of this.pending.values()) p.reject(new Error("the socket closed before the answer"));
      this.pending.clear();
      this.offerToken = opened || !offered;
      this.closedWith(e.code, e.reason);
    };
  }

  /** @param {ChatEvent} ev */
  dispatch(ev) {
    if (ev.cursor !== undefined) this.cursor = ev.cursor;
    if (ev.type === "hello") {
      this.live = true;
      this.attempt = 0;
      if (!ev.recovered) this.cursor = ev.last_id;
      this.scheduleRenewal();
      this.onStatus("live");
    }
    if ((ev.type === "ack" || ev.type === "error" || ev.type === "pong") && typeof ev.id === "number" && this.pending.has(ev.id)) {
      const p = /** @type {{resolve: (ev: ChatEvent) => void}} */ (this.pending.get(ev.id));
      this.pending.delete(ev.id);
      p.resolve(ev);
      return;
    }
    this.onEvent(ev);
  }

  /**
   * @param {number} code
   * @param {string} reason
   */
  async closedWith(code, reason) {
    if (this.closed) return;
    const refresh = this.client.refreshToken;
    if (code === 4001 || code === 4002) {
      const t = refresh ? await refresh(code === 4002 ? "expired" : "refused") : null;
      if (this.closed) return;
      if (!t && code === 4001) {
        this.stop(code, reason);
        return;
      }
      this.client.token = t || "";
      this.offerToken = true;
      this.connect();
      return;
    }
    if (final.has(code)) {
      this.stop(code, reason);
      return;
    }
    const wait = backoffDelay(this.attempt++, this.backoff);
    this.onStatus("reconnecting", { wait, code, reason });
    this.timer = setTimeout(() => this.connect(), wait);
  }

  /**
   * @param {number} code
   * @param {string} reason
   */
  stop(code, reason) {
    this.closed = true;
    Subscription.open.delete(this);
    this.onStatus("stopped", { code, reason });
  }

  // scheduleRenewal asks refreshToken for a fresh platform token shortly
  // before the current one's exp, and renews the socket with it.
  scheduleRenewal() {
    clearTimeout(this.renewTimer);
    const exp = tokenExpiry(this.client.token);
    if (!exp || !this.client.refreshToken) return;
    const left = exp - Date.now();
    const at = Math.max(left - Math.min(left / 5, 60000), 0);
    const ws = this.ws;
    this.renewTimer = setTimeout(async () => {
      const refresh = this.client.refreshToken;
      const t = refresh ? await refresh("expiring") : null;
      if (t && ws === this.ws) this.client.setToken(t);
    }, Math.min(at, 2 ** 31 - 1));
  }

  /**
   * The client's token changed (setToken): hand it to the open socket.
   * @param {string} prev
   */
  tokenChanged(prev) {
    const t = this.client.token;
    this.offerToken = true;
    if (!t || !this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    const type = isJWT(prev) && isJWT(t) ? "refresh" : "auth";
    this.authFrame(type, t).then((ev) => {
      if (ev.type === "error" && type === "refresh") return this.authFrame("auth", t);
      return ev;
    });
  }

  /**
   * Sends an auth or refresh frame; its answer also goes to onEvent (the
   * ack names the user), and a refresh moves the renewal to the new exp.
   * @param {string} type
   * @param {string} token
   * @returns {Promise<ChatEvent>}
   */
  authFrame(type, token) {
    return this.request({ type, token }).then(
      (ev) => {
        if (ev.type === "ack") this.scheduleRenewal();
        this.onEvent(ev);
        return ev;
      },
      (err) => ({ type: "error", message: String(err.message || err) }),
    );
  }

  /**
   * Writes a frame with a new id and resolves with its answer (ack, error
   * or pong); rejects when there is no socket or it closes first.
   * @param {Record<string, any>} frame
   * @returns {Promise<ChatEvent>}
   */
  request(frame) {
    return new Promise((resolve, reject) => {
      const ws = this.ws;
      if (!ws || ws.readyState !== WebSocket.OPEN) {
        reject(new Error("not connected"));
        return;
      }
      const id = ++this.reqId;
      this.pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ ...frame, id }));
    });
  }

  /**
   * Sends a message to the channel over the socket: resolves with the ack
   * ({message, reply, replayed} once stored, {held} when held for review),
   * rejects with a ChatError the server's answer, or an Error when not
   * connected or the socket closed first (then the outcome is unknown:
   * send again with the same idempotencyKey).
   * @param {string} text
   * @param {{idempotencyKey?: string}} [opts]
   * @returns {Promise<ChatEvent>}
   */
  async send(text, opts = {}) {
    /** @type {Record<string, any>} */
    const frame = { type: "send", message: text };
    if (opts.idempotencyKey) frame.idempotency_key = opts.idempotencyKey;
    const ev = await this.request(frame);
    if (ev.type === "error") throw new ChatError(ev.status, ev);
    return ev;
  }

  /** Ends the subscription. */
  close() {
    this.closed = true;
    Subscription.open.delete(this);
    clearTimeout(this.timer);
    clearTimeout(this.renewTimer);
    const ws = this.ws;
    this.ws = null;
    if (ws) ws.close(1000, "closed by the client");
  }
}
