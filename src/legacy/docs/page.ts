/**
 * The interactive documentation page: Swagger UI from swagger-ui-dist, served by the proxy itself.
 * Scripts and styles are separate files (no inline code) so the page runs under a strict CSP.
 */

/** The HTML of `{basePath}/docs/`; every URL is relative to it. */
export const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>User and Group Administration REST API (legacy) · idm-compat</title>
  <link rel="icon" type="image/png" href="./favicon-32x32.png">
  <link rel="stylesheet" href="./swagger-ui.css">
  <link rel="stylesheet" href="./docs.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="./swagger-ui-bundle.js"></script>
  <script src="./docs.js"></script>
</body>
</html>
`;

/**
 * Starts Swagger UI on the proxy's own document. The page was loaded with the browser's Basic
 * credentials; same-origin requests (the document and "Try it out") send them again because the
 * requests carry credentials.
 */
export const DOCS_SCRIPT = `'use strict';
window.ui = SwaggerUIBundle({
  url: new URL('./openapi.json', window.location.href).href,
  dom_id: '#swagger-ui',
  deepLinking: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
  displayOperationId: true,
  withCredentials: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
  requestInterceptor: function (request) {
    request.credentials = 'same-origin';
    return request;
  },
});
`;

/** Small layout fixes for the page. */
export const DOCS_CSS = `body { margin: 0; background: #fafafa; }
`;

/** Content-Security-Policy of the docs responses: only the proxy's own scripts, styles and API. */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  // Swagger UI sets style attributes from script.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');
