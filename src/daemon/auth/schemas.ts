import * as v from 'valibot';
import { jsonObject, NonEmptyString } from '../../contract/schemas.js';

export const ROLES = ['ADMIN', 'USER'] as const;
export type Role = (typeof ROLES)[number];

const byteLength = (text: string) => Buffer.byteLength(text, 'utf8');

/** bcrypt reads at most 72 bytes; longer passwords would be silently truncated. */
export const Password = v.pipe(
  v.string(),
  v.check((text) => byteLength(text) >= 8, 'must be at least 8 bytes'),
  v.check((text) => byteLength(text) <= 72, 'must be at most 72 bytes (UTF-8)'),
);

/** Deliberately loose (admin@localhost is valid here); uniqueness is case-insensitive. */
export const Email = v.pipe(
  v.string(),
  v.trim(),
  v.maxLength(254, 'must be at most 254 characters'),
  v.regex(/^[^\s@]+@[^\s@]+$/, 'must be an e-mail address'),
);

export const Roles = v.pipe(
  v.array(v.picklist(ROLES, 'must be ADMIN or USER')),
  v.minLength(1, 'must name at least one role'),
  v.transform((roles) => [...new Set(roles)]),
);

export const FullName = NonEmptyString(200);

export const LoginBody = jsonObject({
  email: v.pipe(v.string(), v.maxLength(254, 'must be at most 254 characters')),
  password: v.pipe(v.string(), v.maxLength(1024, 'must be at most 1024 characters')),
});

export const ChangePasswordBody = jsonObject({
  currentPassword: v.pipe(v.string(), v.maxLength(1024, 'must be at most 1024 characters')),
  newPassword: Password,
});

export const CreateUserBody = jsonObject({
  email: Email,
  fullName: FullName,
  password: Password,
  roles: v.optional(Roles),
});

export const PatchUserBody = v.pipe(
  jsonObject({
    fullName: v.optional(FullName),
    roles: v.optional(Roles),
    active: v.optional(v.boolean()),
  }),
  v.check((body) => Object.keys(body).length > 0, 'must change at least one of fullName, roles, active'),
);

export const ResetPasswordBody = jsonObject({ password: Password });

export type LoginInput = v.InferOutput<typeof LoginBody>;
export type ChangePasswordInput = v.InferOutput<typeof ChangePasswordBody>;
export type CreateUserInput = v.InferOutput<typeof CreateUserBody>;
export type PatchUserInput = v.InferOutput<typeof PatchUserBody>;
