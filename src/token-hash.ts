// How a client token is kept: only its SHA-256, as hex. The tokens table stores it, the
// importer copies Tinyid's tokens as it, and serving compares a request's token by it.
import { createHash } from 'node:crypto';

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');
