/*
 * clients/node/lib/connect.js
 *	  The worker's connections: libpq's host lists and
 *	  target_session_attrs (node-postgres connects to one host), the
 *	  password file, and the cancel request that ends a wait.
 *
 *	  A connection is given as a URI (its host list:
 *	  postgres://worker@db1:5432,db2:5432/app?target_session_attrs=read-write),
 *	  a pg ClientConfig object (one server), a function returning a
 *	  connected pg Client, or nothing: then SCHEDQ_DSN, else PGHOST and
 *	  PGPORT (comma lists: one port for all, or one each) with
 *	  PGTARGETSESSIONATTRS, and the rest of libpq's variables as pg reads
 *	  them.  The password: the one given, else PGPASSWORD, else the
 *	  password file's line (~/.pgpass, or PGPASSFILE), as libpq finds it.
 */
'use strict';

const net = require('net');
const { Client } = require('pg');
const pgpass = require('pgpass');

function password(params) {
	if (process.env.PGPASSWORD !== undefined) return Promise.resolve(process.env.PGPASSWORD);
	return new Promise((resolve) => pgpass(params, resolve));
}

/* The servers to try in order, and the target_session_attrs. */
function servers(connection) {
	let target = process.env.PGTARGETSESSIONATTRS || 'any';
	let list;
	const dsn = connection === undefined ? process.env.SCHEDQ_DSN : connection;
	const uri =
		typeof dsn === 'string' && /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/.exec(dsn);
	if (uri) {
		// target_session_attrs is ours to apply, not pg's.
		const rest = uri[4]
			.replace(/([?&])target_session_attrs=([^&#]*)&?/, (all, sep, v) => {
				target = decodeURIComponent(v);
				return sep;
			})
			.replace(/[?&]$/, '');
		list = uri[3]
			.split(',')
			.map((host) => ({ connectionString: uri[1] + (uri[2] || '') + host + rest }));
	} else if (typeof dsn === 'string' && dsn !== '') {
		list = [{ connectionString: dsn }];
	} else if (dsn && typeof dsn === 'object') {
		list = [{ ...dsn }];
	} else {
		const hosts = (process.env.PGHOST || '').split(',');
		const ports = (process.env.PGPORT || '').split(',');
		list =
			hosts.length < 2
				? [{}]
				: hosts.map((host, i) => ({
						host,
						port: Number(ports.length > 1 ? ports[i] : ports[0]) || 5432,
					}));
	}
	if (target !== 'any' && target !== 'read-write')
		throw new TypeError(`target_session_attrs "${target}" is not supported (any or read-write)`);
	for (const s of list) if (s.password === undefined) s.password = password;
	return { target, list };
}

/* A function that opens a connection: to the first server of the list
 * that takes it (and, for read-write, is not read-only).  Throws the last
 * server's error. */
function connector(connection) {
	if (typeof connection === 'function') return connection;
	const { target, list } = servers(connection);
	return async function connect() {
		let failure;
		for (const server of list) {
			const client = new Client(server);
			client.on('error', () => {}); // a broken connection: its next query fails too
			try {
				await client.connect();
				if (target === 'read-write') {
					const { rows } = await client.query('SHOW transaction_read_only');
					if (rows[0].transaction_read_only === 'on') {
						failure = new Error(`the server at ${client.host}:${client.port} is read-only`);
						failure.code = 'EREADONLY';
						await client.end().catch(() => {});
						continue;
					}
				}
				return client;
			} catch (err) {
				failure = err;
				await client.end().catch(() => {});
			}
		}
		throw failure;
	};
}

/* End the statement the client runs: a CancelRequest, as libpq's PQcancel
 * sends it, on a connection of its own (no login; a pooler passes it on to
 * the server connection running the statement).  As libpq does, the
 * socket stays open until the other side closes it.  Resolves when done. */
function cancel(client) {
	return new Promise((resolve) => {
		if (!client || !client.processID) return resolve();
		const request = Buffer.alloc(16);
		request.writeInt32BE(16, 0);
		request.writeInt32BE(80877102, 4);
		request.writeInt32BE(client.processID, 8);
		request.writeInt32BE(client.secretKey, 12);
		const host = client.host || client.connectionParameters.host;
		const port = client.port || client.connectionParameters.port;
		const socket = host.startsWith('/')
			? net.connect(`${host}/.s.PGSQL.${port}`)
			: net.connect(port, host);
		socket.setTimeout(5000, () => socket.destroy());
		socket.on('connect', () => socket.write(request));
		socket.on('end', () => socket.destroy());
		socket.on('close', resolve);
		socket.on('error', () => {});
	});
}

module.exports = { connector, cancel, servers };
