// JSON schemas shared by routes (they validate requests and generate the OpenAPI document).

/** A tag name in a path or body. */
export const tagName = { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' } as const;

/** Params of routes under /:tag. */
export const tagParam = {
  type: 'object',
  required: ['tag'],
  properties: { tag: tagName },
} as const;
