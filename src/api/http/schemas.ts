// JSON schemas shared by routes (they validate requests and generate the OpenAPI document).
import { TAG_NAME_PATTERN } from '../../core/tag-name.js';

/** A tag name in a path or body. */
export const tagName = { type: 'string', pattern: TAG_NAME_PATTERN } as const;

/** Params of routes under /:tag. */
export const tagParam = {
  type: 'object',
  required: ['tag'],
  properties: { tag: tagName },
} as const;
