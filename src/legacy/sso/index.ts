import type { LegacyOperation } from '../operation.js';
import { ssoAuthenticateOperation } from './authenticate.js';

/** The single-sign-on operation of seed 4.5. */
export const SSO_OPERATIONS: readonly LegacyOperation[] = [ssoAuthenticateOperation];
