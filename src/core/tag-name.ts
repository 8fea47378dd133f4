// What a tag name may be, the one definition every check of a name uses: HTTP paths and
// schemas, the pre-router path, the stream and gRPC requests, UDP rule names, imports and
// the DEMO_TAG setting.

/** The characters of a name, as messages quote them. */
export const TAG_NAME_CHARS = '[A-Za-z0-9_.-]{1,64}';
/** The whole-string pattern, as JSON schemas take it. */
export const TAG_NAME_PATTERN = '^[A-Za-z0-9_.-]{1,64}$';
export const TAG_NAME = new RegExp(TAG_NAME_PATTERN);
