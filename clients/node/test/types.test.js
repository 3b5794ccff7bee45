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

/* The js blocks of a Markdown page (of its section `heading` only, when
 * given). */
function jsBlocks(file, heading) {
	let text = fs.readFileSync(file, 'utf8');
	if (heading) {
		const at = text.indexOf(`\n${heading}\n`);
		assert.ok(at >= 0, `${file} has a section "${heading}"`);
		const next = text.indexOf('\n## ', at + heading.length + 2);
		text = text.slice(at, next < 0 ? undefined : next);
	}
	return [...text.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

test('the examples of the README and the guide type-check against index.d.ts', () => {
	const top = path.join(root, '../..');
	const blocks = [
		...jsBlocks(path.join(root, 'README.md')),
		...jsBlocks(path.join(top, 'docs/guide/workers.md'), '## In Node.js'),
		fs.readFileSync(path.join(top, 'examples/node/worker.js'), 'utf8').replace(/^#!.*\n/, ''),
	];
	assert.ok(blocks.length >= 6, `${blocks.length} examples`);
	const dir = fs.mkdtempSync(path.join(require('os').tmpdir(), 'schedq-node-examples-'));
	try {
		const files = blocks.map((body, i) => {
			const f = path.join(dir, `example${i}.js`);
			fs.writeFileSync(f, `// @ts-check\n${body}\nmodule.exports = {};\n`);
			return f;
		});
		const types = path.join(root, 'node_modules/@types');
		fs.writeFileSync(
			path.join(dir, 'tsconfig.json'),
			JSON.stringify({
				compilerOptions: {
					allowJs: true,
					checkJs: true,
					noEmit: true,
					strict: false,
					module: 'commonjs',
					target: 'es2022',
					lib: ['es2022'],
					typeRoots: [types],
					types: ['node'],
					baseUrl: dir,
					paths: {
						schedq: [path.join(root, 'index.d.ts')],
						pg: [path.join(types, 'pg/index.d.ts')],
					},
				},
				files: files.map((f) => path.basename(f)),
			})
		);
		const tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
		try {
			execFileSync(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], {
				encoding: 'utf8',
			});
		} catch (err) {
			const shown = files.map((f, i) => `--- ${path.basename(f)}\n${blocks[i]}`).join('\n');
			assert.fail(`tsc:\n${err.stdout}${err.stderr}\n${shown}`);
		}
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
});
