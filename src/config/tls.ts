import { createHash, createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type AppConfig, ConfigError } from './load.js';

/** The PEM files of `server.tls`, read and checked: what the HTTPS server is started with. */
export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
}

/**
 * Reads `server.tls.cert` and `server.tls.key` and checks that they can serve HTTPS: readable, a
 * PEM certificate, a PEM private key (not passphrase-protected), and the key of that certificate.
 * Throws a {@link ConfigError} naming the key and the file, never the file's content; undefined
 * without `server.tls`. Run at start before anything is opened, and by `idm-compat config check`.
 */
export function loadTlsFiles(config: Pick<AppConfig, 'server' | 'source'>): TlsFiles | undefined {
  const tls = config.server.tls;
  if (tls === undefined) return undefined;
  const problems: { path: string; message: string }[] = [];
  const read = (at: string, file: string): Buffer | undefined => {
    try {
      return readFileSync(file);
    } catch (error) {
      problems.push({
        path: at,
        message: `cannot read ${path.resolve(file)}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      });
      return undefined;
    }
  };
  const cert = read('server.tls.cert', tls.cert);
  const key = read('server.tls.key', tls.key);
  let certificate: X509Certificate | undefined;
  if (cert) {
    try {
      certificate = new X509Certificate(cert);
    } catch {
      problems.push({
        path: 'server.tls.cert',
        message: `${path.resolve(tls.cert)} holds no PEM certificate`,
      });
    }
  }
  let privateKey: KeyObject | undefined;
  if (key) {
    try {
      privateKey = createPrivateKey(key);
    } catch {
      problems.push({
        path: 'server.tls.key',
        message: `${path.resolve(tls.key)} holds no PEM private key without a passphrase`,
      });
    }
  }
  if (certificate && privateKey && !certificate.checkPrivateKey(privateKey)) {
    problems.push({
      path: 'server.tls.key',
      message: `${path.resolve(tls.key)} is not the private key of the certificate in ${path.resolve(tls.cert)}`,
    });
  }
  if (problems.length > 0) throw new ConfigError(config.source ?? '(embedded defaults)', problems);
  return cert && key ? { cert, key } : undefined;
}

/** A digest of the certificate and key a server serves (the bytes of `server.tls`'s files). */
export function tlsDigest(files: TlsFiles): string {
  return createHash('sha256').update(files.cert).update('\0').update(files.key).digest('hex');
}

/**
 * A digest of what `server.tls`'s files hold now, as {@link tlsDigest} (undefined without
 * `server.tls`; a file that cannot be read counts as its error): a reload compares it with the
 * server's, since the server keeps the certificate it started with, and a renewed one that goes
 * unmentioned reads as applied (nginx reloads it on SIGHUP).
 */
export function tlsFingerprint(config: Pick<AppConfig, 'server'>): string | undefined {
  const tls = config.server.tls;
  if (tls === undefined) return undefined;
  const read = (file: string) => {
    try {
      return readFileSync(file);
    } catch (error) {
      return Buffer.from(`unreadable: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  };
  return tlsDigest({ cert: read(tls.cert), key: read(tls.key) });
}
