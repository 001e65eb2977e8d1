/**
 * Errors of the Docker volume adapter. Each has a `code` callers branch on and a message that says
 * what to do about it; the Docker Engine's own answer (status and message) stays on the error.
 */

export type DockerVolumeErrorCode =
  /** No daemon answers on the socket (missing, refused, not allowed). */
  | 'ERR_DOCKER_UNAVAILABLE'
  /** The named volume does not exist. */
  | 'ERR_DOCKER_NO_VOLUME'
  /** The helper image is not in the daemon's image store (nothing is pulled for you). */
  | 'ERR_DOCKER_NO_HELPER_IMAGE'
  /** Any other answer the Engine API gave that we cannot go on from. */
  | 'ERR_DOCKER_API'
  /** A helper command exited non-zero (its output is in the message). */
  | 'ERR_DOCKER_HELPER_FAILED'
  /** A call on a volume after close(). */
  | 'ERR_DOCKER_VOLUME_CLOSED'
  /** A bad option or flush entry: refused before anything was sent. */
  | 'ERR_INVALID_ARG_VALUE'

export class DockerVolumeError extends Error {
  constructor(
    readonly code: DockerVolumeErrorCode,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(`rewindfs docker-volume: ${message}`, options)
    this.name = 'DockerVolumeError'
  }
}

const PROVISION_HINT =
  'start one, e.g. as root `bash scripts/provision-docker.sh` (a private dockerd on unix:///tmp/rewindfs-docker.sock), ' +
  'or pass the socketPath of a running daemon'

export function unavailable(socketPath: string, cause: NodeJS.ErrnoException): DockerVolumeError {
  const why =
    cause.code === 'ENOENT'
      ? 'the socket does not exist'
      : cause.code === 'ECONNREFUSED'
        ? 'the connection was refused (the daemon is not running)'
        : cause.code === 'EACCES' || cause.code === 'EPERM'
          ? 'permission denied (run as root or as a member of the docker group)'
          : `${cause.code ?? 'error'}: ${cause.message}`
  return new DockerVolumeError('ERR_DOCKER_UNAVAILABLE', `no Docker daemon answers on ${socketPath}: ${why}; ${PROVISION_HINT}`, undefined, { cause })
}

export function noVolume(name: string): DockerVolumeError {
  return new DockerVolumeError('ERR_DOCKER_NO_VOLUME', `no such volume '${name}': create it first (docker volume create ${name})`, 404)
}

export function noHelperImage(image: string): DockerVolumeError {
  return new DockerVolumeError(
    'ERR_DOCKER_NO_HELPER_IMAGE',
    `the helper image '${image}' is not in the daemon's image store and nothing is pulled for you: ` +
      `pull it (docker pull ${image}) where a registry is reachable, or build the offline one with ` +
      "`bash scripts/provision-docker.sh` and pass helperImage: 'rewindfs-helper:local'",
    404,
  )
}

export function invalid(message: string): DockerVolumeError {
  return new DockerVolumeError('ERR_INVALID_ARG_VALUE', message)
}
