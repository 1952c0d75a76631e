// Types of client.js, the chat's browser client (served at /client.d.ts
// beside it). The protocol: /docs and the service README.

export interface User {
  id: string;
  name: string;
  role: string;
}

export interface Message {
  id: number;
  channel: string;
  user: User;
  text: string;
  created_at: string;
  bot: boolean;
  deleted?: boolean;
  deleted_at?: string;
}

/** One server object: hello, presence, message, message_deleted,
 * user_timed_out, user_banned, shield_mode, ack, pong, error. */
export interface ChatEvent {
  type: string;
  [field: string]: any;
}

export type RefreshReason = "expiring" | "expired" | "refused";
export type RefreshToken = (reason: RefreshReason) => string | null | Promise<string | null>;
export type Status = "connecting" | "live" | "reconnecting" | "stopped";

export interface Backoff {
  /** milliseconds, default 500 */
  min?: number;
  /** milliseconds, default 30000 */
  max?: number;
}

export interface SubscribeOptions {
  since?: string;
  onEvent?: (ev: ChatEvent) => void;
  onStatus?: (status: Status, detail?: { wait?: number; code?: number; reason?: string }) => void;
  backoff?: Backoff;
}

export class ChatError extends Error {
  constructor(status: number, body: any);
  status: number;
  error: string;
  reason?: string;
  retryAfter?: number;
  until?: string | null;
  details?: { field: string; message: string }[];
  body: any;
}

export function backoffDelay(attempt: number, b?: Backoff): number;
export function isJWT(t: string | null | undefined): boolean;
export function tokenExpiry(t: string): number;
export function messageId(cursor: string | number | null | undefined): number;
export function newIdempotencyKey(): string;

export class ChatClient {
  constructor(opts?: { base?: string | URL; token?: string; refreshToken?: RefreshToken });
  base: URL;
  token: string;
  refreshToken: RefreshToken | null;
  setToken(token: string): void;
  request(
    method: string,
    path: string,
    opts?: { query?: Record<string, string | number | undefined>; body?: any; headers?: Record<string, string> },
  ): Promise<any>;
  send(channel: string, text: string, opts?: { idempotencyKey?: string }): Promise<any>;
  messages(channel: string, page?: { limit?: number; before?: number; after?: number }): Promise<{ channel: string; messages: Message[] }>;
  me(channel?: string): Promise<any>;
  subscribe(channel: string, opts?: SubscribeOptions): Subscription;
}

export class Subscription {
  static open: Set<Subscription>;
  constructor(client: ChatClient, channel: string, opts: SubscribeOptions);
  client: ChatClient;
  channel: string;
  /** The last cursor seen: the next socket resumes after it. */
  cursor: string | null;
  /** True once the open socket's hello came. */
  live: boolean;
  url(): string;
  send(text: string, opts?: { idempotencyKey?: string }): Promise<ChatEvent>;
  request(frame: Record<string, any>): Promise<ChatEvent>;
  close(): void;
}
