!> dense: the few dense linear-algebra tools the grounded structure needs, on small
!> matrices (a few dozen rows): an LU solve with partial pivoting and the matrix
!> exponential (Pade 13 with scaling and squaring, Higham 2005, the algorithm behind
!> scipy.linalg.expm at its highest degree).
module dense
  use, intrinsic :: iso_fortran_env, only: dp => real64
  implicit none
  private
  public :: dp, solve, inverse, expm, identity

contains

  !> The n x n identity.
  pure function identity(n) result(eye)
    integer, intent(in) :: n
    real(dp) :: eye(n, n)
    integer :: i
    eye = 0.0_dp
    do i = 1, n
      eye(i, i) = 1.0_dp
    end do
  end function identity

  !> X with A X = B (A n x n, B n x m) by Gaussian elimination with partial pivoting.
  !> ok is .false. if A is singular to working precision.
  subroutine solve(a, b, x, ok)
    real(dp), intent(in) :: a(:, :), b(:, :)
    real(dp), intent(out) :: x(size(b, 1), size(b, 2))
    logical, intent(out) :: ok
    real(dp) :: lu(size(a, 1), size(a, 2)), row(size(b, 2)), arow(size(a, 2)), f
    integer :: n, i, j, p
    n = size(a, 1)
    lu = a
    x = b
    ok = .true.
    do j = 1, n
      p = j - 1 + maxloc(abs(lu(j:n, j)), dim=1)
      if (lu(p, j) == 0.0_dp) then
        ok = .false.
        return
      end if
      if (p /= j) then
        arow = lu(j, :); lu(j, :) = lu(p, :); lu(p, :) = arow
        row = x(j, :); x(j, :) = x(p, :); x(p, :) = row
      end if
      do i = j + 1, n
        f = lu(i, j) / lu(j, j)
        if (f /= 0.0_dp) then
          lu(i, j + 1:n) = lu(i, j + 1:n) - f * lu(j, j + 1:n)
          x(i, :) = x(i, :) - f * x(j, :)
        end if
        lu(i, j) = 0.0_dp
      end do
    end do
    do j = n, 1, -1  ! back substitution, row j
      if (j < n) x(j, :) = x(j, :) - matmul(lu(j, j + 1:n), x(j + 1:n, :))
      x(j, :) = x(j, :) / lu(j, j)
    end do
  end subroutine solve

  !> A^-1 (n x n); ok is .false. if A is singular.
  subroutine inverse(a, ainv, ok)
    real(dp), intent(in) :: a(:, :)
    real(dp), intent(out) :: ainv(size(a, 1), size(a, 1))
    logical, intent(out) :: ok
    call solve(a, identity(size(a, 1)), ainv, ok)
  end subroutine inverse

  !> e^A by the [13/13] Pade approximant with scaling and squaring (Higham 2005):
  !> A / 2^s with ||A / 2^s||_1 <= theta_13, r_13 = (V - U)^-1 (U + V), then s squarings.
  function expm(a) result(e)
    real(dp), intent(in) :: a(:, :)
    real(dp) :: e(size(a, 1), size(a, 1))
    real(dp), parameter :: theta13 = 5.371920351148152_dp
    real(dp), parameter :: b(0:13) = [64764752532480000.0_dp, 32382376266240000.0_dp, &
         7771770303897600.0_dp, 1187353796428800.0_dp, 129060195264000.0_dp, &
         10559470521600.0_dp, 670442572800.0_dp, 33522128640.0_dp, 1323241920.0_dp, &
         40840800.0_dp, 960960.0_dp, 16380.0_dp, 182.0_dp, 1.0_dp]
    real(dp), dimension(size(a, 1), size(a, 1)) :: x, x2, x4, x6, u, v, eye
    real(dp) :: norm1
    integer :: n, s, i
    logical :: ok
    n = size(a, 1)
    eye = identity(n)
    norm1 = maxval(sum(abs(a), dim=1))
    s = 0
    if (norm1 > theta13) s = max(0, ceiling(log(norm1 / theta13) / log(2.0_dp)))
    x = a / 2.0_dp**s
    x2 = matmul(x, x)
    x4 = matmul(x2, x2)
    x6 = matmul(x4, x2)
    u = matmul(x6, b(13) * x6 + b(11) * x4 + b(9) * x2)
    u = u + b(7) * x6 + b(5) * x4 + b(3) * x2 + b(1) * eye
    u = matmul(x, u)
    v = matmul(x6, b(12) * x6 + b(10) * x4 + b(8) * x2)
    v = v + b(6) * x6 + b(4) * x4 + b(2) * x2 + b(0) * eye
    call solve(v - u, u + v, e, ok)
    if (.not. ok) error stop "expm: singular Pade denominator"
    do i = 1, s
      e = matmul(e, e)
    end do
  end function expm

end module dense
