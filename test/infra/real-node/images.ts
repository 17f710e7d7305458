/**
 * The node's images, built here by tools/node-images (no registry is reachable) and imported into containerd's
 * `k8s.io` namespace, where kubelet finds them. Pods use them with imagePullPolicy Never or IfNotPresent.
 */
import { join } from 'node:path';
import { run } from '../exec.js';
import { IMAGES } from './layout.js';

export interface ImageSpec {
  ref: string;
  entrypoint: string[];
  /** image path -> file on this machine */
  files: Record<string, string>;
}

/** The images every node has: the pod sandbox (pause), CoreDNS, and the tests' web server. */
export function nodeImages(binDir: string): ImageSpec[] {
  const tool = join(binDir, 'node-images');
  return [
    { ref: IMAGES.pause, entrypoint: ['/node-images', 'pause'], files: { '/node-images': tool } },
    { ref: IMAGES.coredns, entrypoint: ['/coredns'], files: { '/coredns': join(binDir, 'coredns') } },
    { ref: IMAGES.testHttp, entrypoint: ['/node-images', 'http'], files: { '/node-images': tool } },
  ];
}

/** Builds each image as a tarball in `dir` and imports it with ctr (containerd's own client). */
export async function importImages(
  opts: { binDir: string; dir: string; containerdSocket: string },
  images: ImageSpec[],
): Promise<void> {
  for (const [i, img] of images.entries()) {
    const tar = join(opts.dir, `image-${i}.tar`);
    const files = Object.entries(img.files).map(([dest, src]) => `${dest}=${src}:755`);
    await run(join(opts.binDir, 'node-images'), ['build', tar, img.ref, ...img.entrypoint, '--', ...files]);
    await run(join(opts.binDir, 'ctr'), [
      '--address',
      opts.containerdSocket,
      '--namespace',
      'k8s.io',
      'images',
      'import',
      tar,
    ]);
  }
}
