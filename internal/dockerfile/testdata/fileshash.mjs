// Computes the E2B JS SDK's COPY files hash, for TestFilesHashMatchesSDK.
// getAllFilesInPath and calculateFilesHash are copied verbatim from
// e2b/dist/index.mjs (e2b 2.x, src/template/utils.ts); the SDK does not
// export them.
//
// usage: node fileshash.mjs NODE_MODULES_DIR CONTEXT SRC DEST IGNORE_JSON
// prints {"hash": ..., "files": [relative posix paths in hash order]}
import fs from "node:fs";
import path from "node:path";
import crypto$1 from "node:crypto";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [nodeModules, contextPath, src, dest, ignoreJSON] = process.argv.slice(2);
const require = createRequire(path.join(nodeModules, "e2b", "package.json"));
const dynamicImport = (name) => import(pathToFileURL(require.resolve(name)).href);

function normalizePath(path) {
	return path.replace(/\\/g, "/");
}

// ---- verbatim from e2b/dist/index.mjs ----
async function getAllFilesInPath(src, contextPath, ignorePatterns, includeDirectories = true) {
	const { glob } = await dynamicImport("glob");
	const files = /* @__PURE__ */ new Map();
	const globFiles = await glob(src, {
		ignore: ignorePatterns,
		withFileTypes: true,
		dot: true,
		cwd: contextPath
	});
	for (const file of globFiles) if (file.isDirectory()) {
		if (includeDirectories) files.set(file.fullpath(), file);
		(await glob(normalizePath(path.join(file.relative() || ".", "**/*")), {
			ignore: ignorePatterns,
			withFileTypes: true,
			dot: true,
			cwd: contextPath
		})).forEach((f) => files.set(f.fullpath(), f));
	} else files.set(file.fullpath(), file);
	return Array.from(files.values()).sort((a, b) => a.fullpath() < b.fullpath() ? -1 : a.fullpath() > b.fullpath() ? 1 : 0);
}
async function calculateFilesHash(src, dest, contextPath, ignorePatterns, resolveSymlinks, stackTrace) {
	const srcPath = path.join(contextPath, src);
	const hash = crypto$1.createHash("sha256");
	const content = `COPY ${src} ${dest}`;
	hash.update(content);
	const files = await getAllFilesInPath(src, contextPath, ignorePatterns, true);
	if (files.length === 0) {
		const error = /* @__PURE__ */ new Error(`No files found in ${srcPath}`);
		if (stackTrace) error.stack = stackTrace;
		throw error;
	}
	const hashStats = (stats) => {
		hash.update(stats.mode.toString());
		hash.update(stats.size.toString());
	};
	for (const file of files) {
		const relativePath = file.relativePosix();
		hash.update(relativePath);
		if (file.isSymbolicLink()) {
			const stats = fs.statSync(file.fullpath(), { throwIfNoEntry: false });
			if (!(resolveSymlinks && ((stats === null || stats === void 0 ? void 0 : stats.isFile()) || (stats === null || stats === void 0 ? void 0 : stats.isDirectory())))) {
				hashStats(fs.lstatSync(file.fullpath()));
				const content = fs.readlinkSync(file.fullpath());
				hash.update(content);
				continue;
			}
		}
		const stats = fs.statSync(file.fullpath());
		hashStats(stats);
		if (stats.isFile()) {
			const content = fs.readFileSync(file.fullpath());
			hash.update(new Uint8Array(content));
		}
	}
	return hash.digest("hex");
}
// ---- end of verbatim copy ----

const ignore = JSON.parse(ignoreJSON);
const files = (await getAllFilesInPath(src, contextPath, ignore, true)).map((f) => f.relativePosix());
let hash = "";
try {
	hash = await calculateFilesHash(src, dest, contextPath, ignore, false);
} catch (e) {
	hash = "error: " + e.message;
}
console.log(JSON.stringify({ hash, files }));
