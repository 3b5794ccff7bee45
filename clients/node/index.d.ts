// clients/node/index.d.ts -- the types of schedq for Node.js (index.js).
// Checked by `tsc --noEmit` in the tests (test/types.test.js).

import type { ClientConfig } from 'pg';
import { EventEmitter } from 'events';

/** Anything with node-postgres's query(text, values): a pg Client or
 * PoolClient (in a transaction or not), or a Pool. */
export interface Queryable {
	query(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
}

/** A task id (bigint in SQL; ids stay far below 2^53). */
export type TaskId = number;

/** An interval: seconds, or PostgreSQL's interval text ('5 minutes'). */
export type Interval = number | string;

/** The options of schedq.submit (docs/reference.md), camelCased. */
export interface SubmitOptions {
	queue?: string;
	priority?: number;
	runAt?: Date | string;
	maxAttempts?: number;
	timeout?: Interval | null;
	lockKey?: string | null;
	version?: number | string | bigint | null;
	concurrencyKey?: string | null;
	requiredCaps?: string[];
	budgets?: string[];
	cost?: number | string;
	runId?: TaskId | string | null;
	dependsOn?: Array<TaskId | string>;
	dedupKey?: string | null;
}

/** One task of submitMany. */
export interface TaskSpec extends SubmitOptions {
	kind: string;
	payload?: unknown;
}

export interface ScheduleOptions {
	timezone?: string;
	enabled?: boolean;
	queue?: string;
	priority?: number;
	maxAttempts?: number;
	timeout?: Interval | null;
	lockKey?: string | null;
	concurrencyKey?: string | null;
	requiredCaps?: string[];
	budgets?: string[];
	cost?: number | string;
}

export interface RunOptions {
	name?: string | null;
	failurePolicy?: 'halt' | 'continue';
}

export function submit(
	db: Queryable,
	kind: string,
	payload?: unknown,
	options?: SubmitOptions
): Promise<TaskId>;
export function submitMany(db: Queryable, tasks: TaskSpec[]): Promise<TaskId[]>;
export function submitSql(
	db: Queryable,
	command: string,
	options?: SubmitOptions
): Promise<TaskId>;
export function schedule(
	db: Queryable,
	name: string,
	schedule: string,
	kind: string,
	payload?: unknown,
	options?: ScheduleOptions
): Promise<string>;
export function unschedule(db: Queryable, name: string): Promise<boolean>;
export function setScheduleEnabled(db: Queryable, name: string, enabled: boolean): Promise<boolean>;
export function createRun(db: Queryable, options?: RunOptions): Promise<TaskId>;
export function cancelRun(db: Queryable, runId: TaskId | string): Promise<boolean>;
export function cancel(db: Queryable, taskId: TaskId | string): Promise<boolean>;
export function retry(db: Queryable, taskId: TaskId | string): Promise<boolean>;
export function pauseQueue(db: Queryable, queue: string): Promise<void>;
export function resumeQueue(db: Queryable, queue: string): Promise<void>;
export function setConcurrencyLimit(
	db: Queryable,
	key: string,
	maxActive: number | null
): Promise<void>;
export function setBudget(
	db: Queryable,
	name: string,
	hardLimit: number | string,
	period?: Interval | null
): Promise<void>;
/** The installed schedq's version; UnsupportedVersion if missing or older. */
export function checkVersion(db: Queryable): Promise<string>;
export const SUPPORTED_VERSIONS: string[];

/** A claimed task, as its handler sees it. */
export declare class Job<P = any> {
	readonly id: TaskId;
	readonly attempt: number;
	readonly queue: string;
	readonly kind: string;
	readonly payload: P;
	readonly priority: number;
	readonly runId: TaskId | null;
	readonly leaseExpiresAt: Date;
	readonly token: string;
	/** Aborted when the attempt is no longer this worker's, or the worker
	 * stops at once. */
	readonly signal: AbortSignal;
	/** schedq.progress: percent 0..100 (null: unknown); the new lease end,
	 * or null when the token is stale. */
	progress(percent: number | null, note?: string | null): Promise<Date | null>;
	heartbeat(): Promise<Date | null>;
	/** Complete in the caller's transaction; the pool does not complete it
	 * again.  False when the token is stale. */
	completeIn(db: Queryable, result?: unknown): Promise<boolean>;
}

export type Handler = (job: Job) => unknown | Promise<unknown>;

/** A connection: a URI (with libpq's host list and
 * target_session_attrs), a pg ClientConfig, or a function returning a
 * connected pg Client.  Omitted: SCHEDQ_DSN, else libpq's PG* variables. */
export type Connection =
	| string
	| ClientConfig
	| (() => Promise<import('pg').Client>);

export interface WorkerOptions {
	handlers?: Record<string, Handler>;
	connection?: Connection;
	/** null or omitted: every queue. */
	queues?: string[] | null;
	caps?: string[];
	/** Handlers running at once (8). */
	concurrency?: number;
	/** Tasks claimed ahead of a free handler, waiting in this process
	 * (0).  They are running in schedq (heartbeaten) from their claim, and
	 * a drain runs them too. */
	prefetch?: number;
	/** Most tasks one claim asks for (concurrency, or prefetch when
	 * larger; at most 1000).  While claimed tasks wait for a handler, the
	 * next claim waits until a whole batch fits. */
	batch?: number;
	/** Seconds (30); heartbeats every third of it. */
	lease?: number;
	/** Longest await_task, seconds (30). */
	wait?: number;
	/** Recorded in claimed_by (host:pid). */
	name?: string;
	/** SIGTERM/SIGINT: drain; a second: stop at once (true). */
	handleSignals?: boolean;
	/** One line per event (e.g. console.log). */
	log?: (line: string) => void;
}

export type Outcome = 'done' | 'retry' | 'failed' | 'stale';

export declare class Worker extends EventEmitter {
	constructor(options?: WorkerOptions);
	readonly name: string;
	register(kind: string, handler: Handler): this;
	/** Resolves when stopped; rejects with CouldNotConnect,
	 * PermissionDenied, UnsupportedVersion or another error no
	 * reconnection helps. */
	run(): Promise<void>;
	stop(options?: { now?: boolean }): void;
	on(event: 'outcome', listener: (job: Job, outcome: Outcome, ms: number, error?: string) => void): this;
	on(event: 'connected', listener: (host: string, port: number) => void): this;
	on(event: 'reconnecting', listener: (err: Error, delay: number, readOnly: boolean) => void): this;
	on(event: 'signal', listener: (signal: string, again: boolean) => void): this;
	on(event: 'heartbeatError', listener: (err: Error) => void): this;
	on(event: 'start', listener: () => void): this;
	on(event: 'stopped', listener: (left: number) => void): this;
}

/** Every error of this library. */
export declare class SchedqError extends Error {
	readonly sqlstate?: string;
	readonly detail?: string;
	readonly hint?: string;
	readonly cause?: unknown;
}
/** 22004 */ export declare class NullValueNotAllowed extends SchedqError {}
/** 22023 */ export declare class InvalidArgument extends SchedqError {}
/** 2202E */ export declare class ArraySubscriptError extends SchedqError {}
/** 22P02 */ export declare class MalformedToken extends SchedqError {}
/** 28000 */ export declare class ForgedToken extends SchedqError {}
/** 54000 */ export declare class LimitExceeded extends SchedqError {}
/** 42501 */ export declare class PermissionDenied extends SchedqError {}
/** 42704 */ export declare class NotFound extends SchedqError {}
/** 3F000 */ export declare class SchemaNotFound extends SchedqError {}
/** 23503 */ export declare class ReferenceNotFound extends SchedqError {}
/** 23505 */ export declare class DuplicateKey extends SchedqError {}
/** 40001 */ export declare class SerializationFailure extends SchedqError {}
/** 55000 */ export declare class ObjectNotInPrerequisiteState extends SchedqError {}
/** 0A000 */ export declare class FeatureNotSupported extends SchedqError {}
/** 25001 */ export declare class ActiveSqlTransaction extends SchedqError {}
/** 25006 */ export declare class ReadOnlySqlTransaction extends SchedqError {}
/** 57014 */ export declare class QueryCanceled extends SchedqError {}
/** XX000 */ export declare class InternalError extends SchedqError {}
export declare class UnsupportedVersion extends SchedqError {}
export declare class CouldNotConnect extends SchedqError {}

/** Thrown by a handler: retry after retryIn seconds (null: schedq's
 * back-off). */
export declare class RetryAfter extends Error {
	constructor(message: string, retryIn?: number | null);
	readonly retryIn: number | null;
}
/** Thrown by a handler: fail the task for good. */
export declare class PermanentFailure extends Error {
	constructor(message: string);
}
/** A node-postgres error as its named class (others returned as they are). */
export function errorFromDriver(err: unknown): unknown;
