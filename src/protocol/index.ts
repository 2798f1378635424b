/** The wire protocol: types, the compatible state vocabulary and the error catalogue. */
export * from './wire.js';
export * from './states.js';
export * from './errors.js';
