/*
 * clients/node/test/types.test.js
 *	  index.d.ts: `tsc --noEmit` (typescript pinned in package-lock.json)
 *	  over it and an application using it (types-check.ts), and every name
 *	  it declares exported by index.js, and the other way round.
 */
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..');

test('tsc --noEmit: index.d.ts and an application using it type-check', () => {
	const tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
	try {
		execFileSync(process.execPath, [tsc, '-p', path.join(__dirname, 'tsconfig.json')], {
			encoding: 'utf8',
		});
	} catch (err) {
		assert.fail(`tsc:\n${err.stdout}${err.stderr}`);
	}
});

test('index.d.ts declares what index.js exports', () => {
	const dts = fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8');
	const declared = new Set(
		[...dts.matchAll(/^(?:\/\*\*.*\*\/ )?export (?:declare )?(?:function|class|const) (\w+)/gm)].map(
			(m) => m[1]
		)
	);
	const exported = new Set(Object.keys(require('..')));
	assert.deepEqual([...exported].filter((n) => !declared.has(n)).sort(), [], 'exported, not declared');
	assert.deepEqual([...declared].filter((n) => !exported.has(n)).sort(), [], 'declared, not exported');
});
