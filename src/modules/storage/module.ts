import path from 'node:path';
import type { AppContext } from '../../context.js';
import { devReceiver } from '../../chain/dev-receiver.js';
import type { ModuleFactory } from '../module.js';
import { Availability } from './availability.js';
import { gatewayRoutes } from './gateway.js';
import type { ImageStore } from './image-store.js';
import { KuboImageStore } from './kubo-store.js';
import { LocalImageStore } from './local-store.js';
import { StorageReconciler, storageLoops } from './reconcile.js';
import { storageRoutes } from './routes.js';
import { StorageStore } from './store.js';
import { UploadService } from './upload.js';
import { uploadOrders } from './tables.js';

export interface StorageModuleOptions {
  /** Replace the image store (tests wrap it to inject failures). */
  images?: (ctx: AppContext) => ImageStore;
}

/** Blocks in the data dir, or on the Kubo node IPFS_API_URL names. */
export function defaultImageStore(ctx: AppContext): ImageStore {
  const url = ctx.config.storage.ipfsApiUrl;
  return url ? new KuboImageStore(url) : new LocalImageStore(path.join(ctx.config.dataDir, 'ipfs'));
}

/** Who is paid for uploads: STORAGE_PAY_TO, or on the devchain a dev receiver; on a real chain without it, nobody (unavailable). */
function payToOf(ctx: AppContext): string | null {
  if (ctx.config.storage.payTo) return ctx.config.storage.payTo;
  return ctx.chain.devchain ? devReceiver(ctx.config.dataDir, 'storage-receiver-key') : null;
}

export function createStorageModule(options: StorageModuleOptions = {}): ModuleFactory {
  return (ctx) => {
    const store = new StorageStore(ctx.db);
    ctx.keyRotation.hashedColumn({ name: 'upload_orders.key_hash', table: uploadOrders, key: [uploadOrders.id], column: uploadOrders.keyHash });
    const images = (options.images ?? defaultImageStore)(ctx);
    const payTo = payToOf(ctx);
    const availability = new Availability(ctx, images, payTo);
    const uploads = new UploadService({ ctx, store, images, payTo: payTo ?? '', available: () => availability.available() });
    const reconciler = new StorageReconciler(ctx, store);
    return {
      name: 'storage',
      routes: {
        api: storageRoutes({ ctx, store, uploads, reconciler, availability }),
        assets: gatewayRoutes(store, images),
      },
      loops: storageLoops(ctx, store, reconciler),
      close: async () => images.close?.(),
    };
  };
}

export const storageModule: ModuleFactory = createStorageModule();
