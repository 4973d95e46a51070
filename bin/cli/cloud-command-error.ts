/**
 * A cloud command's failure before anything was started (no controller, over budget): exit 1 with this message. Apart
 * from the cloud commands, so that the CLI loads their SDK clients only when one runs.
 */
export class CloudCommandError extends Error {}
