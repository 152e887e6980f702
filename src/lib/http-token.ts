/** An RFC 9110 token (5.6.2): what a header field's name may be. */
export const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
