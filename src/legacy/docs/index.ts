import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Hono } from 'hono';
import { DOCS_FOLDER } from '../../config/fixed-paths.js';
import { noSuchPath } from '../../http/legacy-error.js';
import { answerWrongMethods } from '../../http/wrong-method.js';
import type { AppEnv } from '../../services.js';
import type { LegacyOperation } from '../operation.js';
import { buildOpenApiDocument, type LegacyDocsOptions } from './openapi.js';
import { DOCS_CSP, DOCS_CSS, DOCS_HTML, DOCS_SCRIPT } from './page.js';

// swagger-ui-dist's main module loads the whole browser bundle into Node; its path helper alone does not.
const swaggerUiDir = (createRequire(import.meta.url)('swagger-ui-dist/absolute-path.js') as () => string)();

/** Files of swagger-ui-dist the page uses: the only files served from it. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-16x16.png': 'image/png',
  'favicon-32x32.png': 'image/png',
};

/** The docs' folder below the base path (config/fixed-paths.ts: no namespace may take it). */
const ROOT = `/${DOCS_FOLDER}`;

/**
 * The interactive docs below the base path: `/docs/` (Swagger UI), `/docs/openapi.json` (OpenAPI
 * 3.1 generated once, at its first request, from the operation definitions) and the UI's assets.
 * Authentication is applied by the app in front of everything below the base path, docs included.
 */
export function createLegacyDocs(
  operations: readonly LegacyOperation[],
  options: LegacyDocsOptions,
): Hono<AppEnv> {
  const docs = new Hono<AppEnv>();
  // Made at the first request for it, not at start-up: building it (every operation's schemas
  // through the OpenAPI generator) left the idle proxy's V8 heap about 10 MiB larger.
  let openApiJson: string | undefined;
  const assetCache = new Map<string, Promise<Uint8Array<ArrayBuffer>>>();
  const headers = (type: string): Record<string, string> => ({
    'Content-Type': type,
    'Content-Security-Policy': DOCS_CSP,
    'X-Content-Type-Options': 'nosniff',
    // Behind authentication: browsers may keep it, shared caches must not.
    'Cache-Control': 'private, max-age=300',
  });

  // Relative, like every URL of the page: behind a reverse proxy that serves the proxy under a
  // path prefix (`legacy.publicUrl` with a path), the browser stays under it.
  docs.get(ROOT, (c) => c.redirect(`${DOCS_FOLDER}/`, 301));
  docs.get(`${ROOT}/`, (c) => c.body(DOCS_HTML, 200, headers('text/html; charset=utf-8')));
  docs.get(`${ROOT}/openapi.json`, (c) => {
    openApiJson ??= JSON.stringify(buildOpenApiDocument(operations, options));
    return c.body(openApiJson, 200, headers('application/json'));
  });
  docs.get(`${ROOT}/docs.js`, (c) => c.body(DOCS_SCRIPT, 200, headers('text/javascript; charset=utf-8')));
  docs.get(`${ROOT}/docs.css`, (c) => c.body(DOCS_CSS, 200, headers('text/css; charset=utf-8')));
  // One static route per asset, not `/docs/:asset`: a parameter there makes hono fall back from
  // its RegExpRouter to the slower TrieRouter for every request of the app.
  for (const [name, type] of Object.entries(ASSETS)) {
    docs.get(`${ROOT}/${name}`, async (c) => {
      let content = assetCache.get(name);
      if (!content) {
        content = readFile(path.join(swaggerUiDir, name)).then((buffer) => new Uint8Array(buffer));
        assetCache.set(name, content);
      }
      return c.body(await content, 200, headers(type));
    });
  }
  // A path of the docs asked with another method: 405 with `Allow` (SPEC 3: wrong method on a
  // known path), read from the routes above. Any other path below the docs is unknown, whatever
  // the method: 404, as everywhere else.
  answerWrongMethods(docs);
  docs.all(`${ROOT}/*`, (c) => {
    throw noSuchPath(c.req.path);
  });
  return docs;
}
